//! AArch64 (AAPCS64, LP64, little-endian), as LLVM 22's `llc
//! -relocation-model=pic` encodes the wrapper's functions (wrapper-abi.md
//! §4.4):
//!
//! ```text
//! str  x30, [sp, #-16]!        ; save the link register
//! adrp x0, arg                 ; R_AARCH64_ADR_PREL_PG_HI21 arg
//! add  x0, x0, :lo12:arg       ; R_AARCH64_ADD_ABS_LO12_NC arg
//! bl   callee                  ; R_AARCH64_CALL26 callee
//! …                            ; one adrp/add/bl triple per call
//! ldr  x30, [sp], #16
//! ret
//! ```
//!
//! Unlike x86-64, a function's address in the same section is relocated
//! too (against the section symbol), and objects carry the ELF mapping
//! symbols `$x` (code) and `$d` (data).

use gimli::write::{CallFrameInstruction, CommonInformationEntry};
use gimli::{AArch64 as Reg, DW_EH_PE_pcrel, DW_EH_PE_sdata4, Encoding, Format};
use object::elf;

use super::{
    Arg, Call, CodeReloc, Cpu, Fatbin, FatbinCode, Function, Span, Target, TargetReloc, addend,
    internal,
};
use crate::error::{Error, Result};

/// The AArch64 encoder.
pub(crate) struct AArch64;

/// `str x30, [sp, #-16]!`
const SAVE_LR: u32 = 0xf81f_0ffe;
/// `adrp x0, 0`
const ADRP_X0: u32 = 0x9000_0000;
/// `add x0, x0, #0`
const ADD_X0: u32 = 0x9100_0000;
/// `bl 0`
const BL: u32 = 0x9400_0000;
/// `ldr x30, [sp], #16`
const RESTORE_LR: u32 = 0xf841_07fe;
/// `ret`
const RET: u32 = 0xd65f_03c0;
/// `nop`
const NOP: u32 = 0xd503_201f;

impl Cpu for AArch64 {
    fn machine(&self) -> elf::Machine {
        elf::EM_AARCH64
    }

    fn e_flags(&self) -> u32 {
        0
    }

    fn code_align(&self) -> u64 {
        4
    }

    fn data_align(&self) -> u64 {
        // As on x86-64, LLVM aligns arrays of 16 bytes or more to 16.
        16
    }

    fn byte_array_align(&self) -> u64 {
        // The data layout prefers 32-bit alignment for i8 (`i8:8:32`).
        4
    }

    fn abs64(&self) -> elf::RelocationType {
        elf::R_AARCH64_ABS64
    }

    fn eh_pcrel32(&self) -> elf::RelocationType {
        elf::R_AARCH64_PREL32
    }

    fn eh_frame_type(&self) -> elf::SectionType {
        elf::SHT_PROGBITS
    }

    fn mapping_symbols(&self) -> bool {
        true
    }

    fn cie(&self) -> CommonInformationEntry {
        let encoding = Encoding {
            format: Format::Dwarf32,
            version: 1,
            // gimli pads records to this; LLVM pads .eh_frame records to 4.
            address_size: 4,
        };
        // Code alignment 1 (LLVM's choice, though instructions are 4 bytes),
        // data alignment -4.
        let mut cie = CommonInformationEntry::new(encoding, 1, -4, Reg::X30);
        cie.fde_address_encoding = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
        cie.add_instruction(CallFrameInstruction::Cfa(Reg::SP, 0));
        cie
    }

    fn function(&self, _at: u64, calls: &[Call]) -> Result<Function> {
        let mut f = Function::default();
        let word = |f: &mut Function, w: u32| f.code.extend_from_slice(&w.to_le_bytes());
        word(&mut f, SAVE_LR);
        let at = cfi_offset(&f.code)?;
        f.cfi.push((at, CallFrameInstruction::CfaOffset(16)));
        f.cfi
            .push((at, CallFrameInstruction::Offset(Reg::X30, -16)));
        for call in calls {
            // The argument: a section symbol plus an offset, for data and
            // for a function of the same section alike.
            let (symbol, offset) = match call.arg {
                Arg::Data {
                    section, offset, ..
                } => (section, offset),
                Arg::Code { section, offset } => (section, offset),
            };
            for (insn, r_type) in [
                (ADRP_X0, elf::R_AARCH64_ADR_PREL_PG_HI21),
                (ADD_X0, elf::R_AARCH64_ADD_ABS_LO12_NC),
            ] {
                f.relocs.push(CodeReloc {
                    offset: len64(&f.code),
                    r_type,
                    symbol,
                    addend: addend(offset)?,
                });
                word(&mut f, insn);
            }
            f.relocs.push(CodeReloc {
                offset: len64(&f.code),
                r_type: elf::R_AARCH64_CALL26,
                symbol: call.callee,
                addend: 0,
            });
            word(&mut f, BL);
        }
        word(&mut f, RESTORE_LR);
        word(&mut f, RET);
        Ok(f)
    }

    fn padding(&self, len: usize) -> Vec<u8> {
        // Functions are whole instructions, so padding is too.
        NOP.to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect()
    }

    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode> {
        match which {
            Fatbin::Cuda => cuda_code(),
            Fatbin::Hip => hip_code(),
        }
    }
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (wrapper-abi.md §5)
// ---------------------------------------------------------------------------

/// A position in the code, bound once.
#[derive(Debug, Clone, Copy)]
struct Label(usize);

/// How a branch encodes its word offset.
#[derive(Clone, Copy)]
enum Branch {
    /// `b`, `bl`: 26 bits from bit 0.
    Imm26,
    /// `b.cond`, `cbz`, `cbnz`: 19 bits from bit 5.
    Imm19,
}

/// A small assembler for the fixed registration code: instruction words
/// (each with its assembly in a comment), labels for local branches,
/// relocations for everything outside the section (and for addresses in
/// it, which LLVM relocates on AArch64), and the unwind rules after each
/// prologue (AArch64 functions get no epilogue rules from LLVM).
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
    relocs: Vec<TargetReloc>,
    labels: Vec<Option<usize>>,
    /// (offset of the word, label, encoding).
    branches: Vec<(usize, Label, Branch)>,
    /// Relocations whose addend is a label's offset: (index in `relocs`,
    /// label).
    to_labels: Vec<(usize, Label)>,
    start: usize,
    cfi: Vec<(u32, CallFrameInstruction)>,
}

impl Asm {
    fn w(&mut self, word: u32) {
        self.code.extend_from_slice(&word.to_le_bytes());
    }

    fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.code.len());
    }

    fn begin(&mut self) {
        self.start = self.code.len();
        self.cfi.clear();
    }

    fn end(&mut self) -> Span {
        Span {
            offset: len64(&self.code[..self.start]),
            len: len64(&self.code[self.start..]),
            cfi: std::mem::take(&mut self.cfi),
        }
    }

    /// The prologue is written: the CFA is `cfa` bytes above the stack
    /// pointer, and `saved` registers are at these CFA offsets.
    fn prologue(&mut self, cfa: i32, saved: &[(gimli::Register, i32)]) {
        let at = u32::try_from(self.code.len() - self.start).unwrap_or(u32::MAX);
        self.cfi.push((at, CallFrameInstruction::CfaOffset(cfa)));
        for &(r, off) in saved {
            self.cfi.push((at, CallFrameInstruction::Offset(r, off)));
        }
    }

    /// An instruction word with a relocation against `target`.
    fn rel(&mut self, word: u32, r_type: elf::RelocationType, target: Target) {
        self.relocs.push(TargetReloc {
            offset: len64(&self.code),
            r_type,
            target,
            addend: 0,
        });
        self.w(word);
    }

    /// `adrp xN, target` then `add xN, xN, :lo12:target` (`adrp`, `add`:
    /// the words with the register filled in).
    fn address(&mut self, adrp: u32, add: u32, target: Target) {
        self.rel(adrp, elf::R_AARCH64_ADR_PREL_PG_HI21, target);
        self.rel(add, elf::R_AARCH64_ADD_ABS_LO12_NC, target);
    }

    /// `adrp x0, l` and `add x0, x0, :lo12:l` for a label of this
    /// section, relocated against the section.
    fn address_of(&mut self, l: Label) {
        for (word, r_type) in [
            (ADRP_X0, elf::R_AARCH64_ADR_PREL_PG_HI21),
            (ADD_X0, elf::R_AARCH64_ADD_ABS_LO12_NC),
        ] {
            self.to_labels.push((self.relocs.len(), l));
            self.rel(word, r_type, Target::Code);
        }
    }

    /// `bl name`
    fn call(&mut self, name: &'static str) {
        self.rel(BL, elf::R_AARCH64_CALL26, Target::Runtime(name));
    }

    /// A branch to `l`: `word` with its offset field zero.
    fn branch(&mut self, word: u32, l: Label, how: Branch) {
        self.branches.push((self.code.len(), l, how));
        self.w(word);
    }

    /// The code section with every displacement filled in, and its
    /// functions (`jump_table`: code offsets of the table's cases).
    fn finish(
        mut self,
        reg: Span,
        unreg: Span,
        globals: Span,
        jump_table: Vec<u64>,
    ) -> Result<FatbinCode> {
        let broken = internal;
        let at = |labels: &[Option<usize>], l: Label| {
            labels[l.0].ok_or_else(|| broken("a branch to an unbound label"))
        };
        for &(word_at, l, how) in &self.branches {
            let target = at(&self.labels, l)?;
            let delta = (i64::try_from(target).map_err(|_| broken("offset"))?
                - i64::try_from(word_at).map_err(|_| broken("offset"))?)
                / 4;
            let (bits, shift) = match how {
                Branch::Imm26 => (26, 0),
                Branch::Imm19 => (19, 5),
            };
            let limit = 1i64 << (bits - 1);
            if !(-limit..limit).contains(&delta) {
                return Err(broken("a branch is out of range"));
            }
            let field = u32::try_from(delta & ((1 << bits) - 1)).map_err(|_| broken("field"))?;
            let word = &mut self.code[word_at..word_at + 4];
            let old = u32::from_le_bytes(word.try_into().map_err(|_| broken("word"))?);
            word.copy_from_slice(&(old | (field << shift)).to_le_bytes());
        }
        for &(i, l) in &self.to_labels {
            self.relocs[i].addend = addend(len64_usize(at(&self.labels, l)?))?;
        }
        Ok(FatbinCode {
            code: self.code,
            relocs: self.relocs,
            reg,
            unreg,
            globals,
            jump_table,
        })
    }
}

fn len64_usize(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `b.eq`, `b.ne`, `b.gt`: `b.cond` with the condition.
const B_EQ: u32 = 0x5400_0000;
const B_NE: u32 = 0x5400_0001;
const B_GT: u32 = 0x5400_000c;
/// `b`
const B: u32 = 0x1400_0000;

/// The entry loop's prologue and its unwind rules: `sub sp, sp, #48`,
/// `stp x30, x21, [sp, #16]`, `stp x20, x19, [sp, #32]`; then the bounds
/// (x20 = stop, x21 = start), the early exit, the handle in x19.
fn loop_prologue(a: &mut Asm, done: Label, check: Label) {
    a.w(0xd100_c3ff); // sub sp, sp, #0x30
    a.w(0xa901_57fe); // stp x30, x21, [sp, #0x10]
    a.w(0xa902_4ff4); // stp x20, x19, [sp, #0x20]
    a.prologue(
        48,
        &[
            (Reg::X19, -8),
            (Reg::X20, -16),
            (Reg::X21, -24),
            (Reg::X30, -32),
        ],
    );
    a.address(0x9000_0014, 0x9100_0294, Target::EntriesStop); // x20 = __stop_…
    a.address(0x9000_0008, 0x9100_0108, Target::EntriesStart); // x8 = __start_…
    a.w(0xeb14_011f); // cmp x8, x20
    a.branch(B_EQ, done, Branch::Imm19);
    a.w(0xaa00_03f3); // mov x19, x0 (the handle)
    a.address(0x9000_0015, 0x9100_02b5, Target::EntriesStart); // x21 = __start_…
    a.branch(B, check, Branch::Imm26);
}

/// The handle and an entry's address and name as the first four arguments
/// (`h, addr, name, name`).
fn handle_address_name(a: &mut Asm) {
    a.w(0xaa13_03e0); // mov x0, x19
    a.w(0xaa02_03e1); // mov x1, x2
    a.w(0xaa03_03e2); // mov x2, x3
}

/// A kernel: `PRegisterFunction(h, addr, name, name, -1, 0 × 5)`, the last
/// two zeros on the stack.
fn register_function(a: &mut Asm, name: &'static str) {
    a.w(0xaa1f_03e5); // mov x5, xzr
    a.w(0xaa1f_03e6); // mov x6, xzr
    a.w(0xaa1f_03e7); // mov x7, xzr
    handle_address_name(a);
    a.w(0x1280_0004); // mov w4, #-1
    a.w(0xa900_7fff); // stp xzr, xzr, [sp]
    a.call(name);
}

/// The next entry (x21 += 56), or the end; then the kind check against
/// `kind` (`cmp w8, #kind` word).
fn loop_step(a: &mut Asm, next: Label, check: Label, done: Label, cmp_kind: u32) {
    a.bind(next);
    a.w(0x9100_e2b5); // add x21, x21, #0x38
    a.w(0xeb14_02bf); // cmp x21, x20
    a.branch(B_EQ, done, Branch::Imm19);
    a.bind(check);
    a.w(0x7940_16a8); // ldrh w8, [x21, #0xa] (kind)
    a.w(cmp_kind);
    a.branch(B_NE, next, Branch::Imm19);
    a.w(0xa941_a2a3); // ldp x3, x8, [x21, #0x18] (name, size)
    a.w(0xf940_0aa2); // ldr x2, [x21, #0x10] (address)
}

fn loop_epilogue(a: &mut Asm, done: Label) {
    a.bind(done);
    a.w(0xa942_4ff4); // ldp x20, x19, [sp, #0x20]
    a.w(0xa941_57fe); // ldp x30, x21, [sp, #0x10]
    a.w(0x9100_c3ff); // add sp, sp, #0x30
    a.w(RET);
}

/// The atexit handler: load the handle, unregister.
fn unregister(a: &mut Asm, name: &'static str) -> Span {
    a.begin();
    a.w(SAVE_LR);
    a.prologue(16, &[(Reg::X30, -16)]);
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.rel(
        0xf940_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // ldr x0, [x8, :lo12:handle]
    a.call(name);
    a.w(RESTORE_LR);
    a.w(RET);
    a.end()
}

/// The CUDA registration code of LLVM 22 for AArch64 (the same calls as on
/// x86-64; see there).
fn cuda_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let [globals, unreg, func, next, check, managed, done] = [(); 7].map(|()| a.label());

    a.begin();
    a.w(0xa9bf_4ffe); // stp x30, x19, [sp, #-16]!
    a.prologue(16, &[(Reg::X19, -8), (Reg::X30, -16)]);
    a.address(ADRP_X0, ADD_X0, Target::Wrapper); // x0 = &.fatbin_wrapper
    a.call("__cudaRegisterFatBinary");
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.w(0xaa00_03f3); // mov x19, x0
    a.rel(
        0xf900_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // str x0, [x8, :lo12:handle]
    a.branch(BL, globals, Branch::Imm26);
    a.w(0xaa13_03e0); // mov x0, x19
    a.call("__cudaRegisterFatBinaryEnd");
    a.address_of(unreg);
    a.call("atexit");
    a.w(0xa8c1_4ffe); // ldp x30, x19, [sp], #16
    a.w(RET);
    let reg = a.end();

    a.bind(unreg);
    let unreg_span = unregister(&mut a, "__cudaUnregisterFatBinary");

    a.bind(globals);
    a.begin();
    loop_prologue(&mut a, done, check);
    a.bind(func);
    register_function(&mut a, "__cudaRegisterFunction");
    loop_step(&mut a, next, check, done, 0x7100_091f); // cmp w8, #2 (CUDA)
    a.branch(0xb400_0008, func, Branch::Imm19); // cbz x8, func (size 0: a kernel)
    a.w(0xb940_0ea9); // ldr w9, [x21, #0xc] (flags)
    a.w(0x1200_092a); // and w10, w9, #7
    a.w(0x7100_055f); // cmp w10, #1
    a.branch(B_EQ, managed, Branch::Imm19);
    a.branch(0x3500_000a, next, Branch::Imm19); // cbnz w10, next
    // A variable: __cudaRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.w(0x5303_0d24); // ubfx w4, w9, #3, #1 (extern)
    a.w(0x5304_1126); // ubfx w6, w9, #4, #1 (constant)
    handle_address_name(&mut a);
    a.w(0xaa08_03e5); // mov x5, x8
    a.w(0x2a1f_03e7); // mov w7, wzr
    a.call("__cudaRegisterVar");
    a.branch(B, next, Branch::Imm26);
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.w(0xf940_1aa1); // ldr x1, [x21, #0x30] (aux address)
    a.w(0xb940_2aa5); // ldr w5, [x21, #0x28] (data)
    a.w(0xaa13_03e0); // mov x0, x19
    a.w(0xaa08_03e4); // mov x4, x8
    a.call("__cudaRegisterManagedVar");
    a.branch(B, next, Branch::Imm26);
    loop_epilogue(&mut a, done);
    let globals_span = a.end();

    a.finish(reg, unreg_span, globals_span, Vec::new())
}

/// The HIP registration code of LLVM 22 for AArch64: as CUDA's without the
/// end of registration, kind HIP (4), and surfaces and textures too (a
/// tree of compares on the entry type, no jump table).
fn hip_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let [
        globals,
        unreg,
        func,
        next,
        check,
        above1,
        global,
        surface,
        done,
    ] = [(); 9].map(|()| a.label());

    a.begin();
    a.w(SAVE_LR);
    a.prologue(16, &[(Reg::X30, -16)]);
    a.address(ADRP_X0, ADD_X0, Target::Wrapper); // x0 = &.fatbin_wrapper
    a.call("__hipRegisterFatBinary");
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.rel(
        0xf900_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // str x0, [x8, :lo12:handle]
    a.branch(BL, globals, Branch::Imm26);
    a.address_of(unreg);
    a.call("atexit");
    a.w(RESTORE_LR);
    a.w(RET);
    let reg = a.end();

    a.bind(unreg);
    let unreg_span = unregister(&mut a, "__hipUnregisterFatBinary");

    a.bind(globals);
    a.begin();
    loop_prologue(&mut a, done, check);
    a.bind(func);
    register_function(&mut a, "__hipRegisterFunction");
    loop_step(&mut a, next, check, done, 0x7100_111f); // cmp w8, #4 (HIP)
    a.branch(0xb400_0008, func, Branch::Imm19); // cbz x8, func (size 0: a kernel)
    a.w(0xb940_0eab); // ldr w11, [x21, #0xc] (flags)
    a.w(0xb940_2aaa); // ldr w10, [x21, #0x28] (data)
    a.w(0x1200_096c); // and w12, w11, #7 (type)
    a.w(0x5303_0d69); // ubfx w9, w11, #3, #1 (extern)
    a.w(0x7100_059f); // cmp w12, #1
    a.branch(B_GT, above1, Branch::Imm19);
    a.branch(0x3400_000c, global, Branch::Imm19); // cbz w12, global
    a.w(0x7100_059f); // cmp w12, #1
    a.branch(B_NE, next, Branch::Imm19);
    // A managed variable: __hipRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.w(0xf940_1aa1); // ldr x1, [x21, #0x30] (aux address)
    a.w(0xaa13_03e0); // mov x0, x19
    a.w(0xaa08_03e4); // mov x4, x8
    a.w(0x2a0a_03e5); // mov w5, w10
    a.call("__hipRegisterManagedVar");
    a.branch(B, next, Branch::Imm26);
    a.bind(above1);
    a.w(0x7100_099f); // cmp w12, #2
    a.branch(B_EQ, surface, Branch::Imm19);
    a.w(0x7100_0d9f); // cmp w12, #3
    a.branch(B_NE, next, Branch::Imm19);
    // (Falls through for type 3.) A texture: __hipRegisterTexture(h, addr,
    // name, name, (u32) data, normalized, extern).
    a.w(0x5305_1565); // ubfx w5, w11, #5, #1 (normalized)
    handle_address_name(&mut a);
    a.w(0x2a0a_03e4); // mov w4, w10
    a.w(0x2a09_03e6); // mov w6, w9
    a.call("__hipRegisterTexture");
    a.branch(B, next, Branch::Imm26);
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.w(0x5304_1166); // ubfx w6, w11, #4, #1 (constant)
    handle_address_name(&mut a);
    a.w(0x2a09_03e4); // mov w4, w9
    a.w(0xaa08_03e5); // mov x5, x8
    a.w(0x2a1f_03e7); // mov w7, wzr
    a.call("__hipRegisterVar");
    a.branch(B, next, Branch::Imm26);
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    handle_address_name(&mut a);
    a.w(0x2a0a_03e4); // mov w4, w10
    a.w(0x2a09_03e5); // mov w5, w9
    a.call("__hipRegisterSurface");
    a.branch(B, next, Branch::Imm26);
    loop_epilogue(&mut a, done);
    let globals_span = a.end();

    a.finish(reg, unreg_span, globals_span, Vec::new())
}

fn len64(code: &[u8]) -> u64 {
    u64::try_from(code.len()).unwrap_or(u64::MAX)
}

fn cfi_offset(code: &[u8]) -> Result<u32> {
    u32::try_from(code.len()).map_err(|_| Error::usage("wrapper function too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    /// LLVM 22's constructor for one image (wrapper-abi.md §4.4): register
    /// the descriptor at `.data.rel.ro + 0x20`, then `atexit` the function
    /// at 0x24, each address an adrp/add pair with its relocations.
    #[test]
    fn constructor_words_and_relocations() {
        let (reg, atexit, data, text) = (
            SymbolId::nth(0),
            SymbolId::nth(1),
            SymbolId::nth(2),
            SymbolId::nth(3),
        );
        let calls = [
            Call {
                callee: reg,
                arg: Arg::Data {
                    symbol: data,
                    section: data,
                    offset: 0x20,
                },
            },
            Call {
                callee: atexit,
                arg: Arg::Code {
                    section: text,
                    offset: 0x24,
                },
            },
        ];
        let f = AArch64.function(0, &calls).unwrap();
        let words: Vec<u32> = f
            .code
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        // str x30, [sp, #-16]!; adrp; add; bl; adrp; add; bl; ldr x30,
        // [sp], #16; ret (llvm-objdump of llc's object).
        assert_eq!(
            words,
            [
                0xf81f_0ffe,
                0x9000_0000,
                0x9100_0000,
                0x9400_0000,
                0x9000_0000,
                0x9100_0000,
                0x9400_0000,
                0xf841_07fe,
                0xd65f_03c0
            ]
        );
        let relocs: Vec<_> = f
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.symbol, r.addend))
            .collect();
        assert_eq!(
            relocs,
            [
                (4, elf::R_AARCH64_ADR_PREL_PG_HI21, data, 0x20),
                (8, elf::R_AARCH64_ADD_ABS_LO12_NC, data, 0x20),
                (12, elf::R_AARCH64_CALL26, reg, 0),
                (16, elf::R_AARCH64_ADR_PREL_PG_HI21, text, 0x24),
                (20, elf::R_AARCH64_ADD_ABS_LO12_NC, text, 0x24),
                (24, elf::R_AARCH64_CALL26, atexit, 0),
            ]
        );
        assert_eq!(f.code.len(), 36);
        assert_eq!(
            AArch64.padding(8),
            [0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5]
        );
    }
}
