//! AArch64 (AAPCS64, LP64, little-endian), as LLVM 22's `llc
//! -relocation-model=pic` encodes the wrapper's functions (docs/formats/wrapper-objects.md
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

use gimli::AArch64 as Reg;
use object::elf;

use super::asm::{self, Label};
use super::code::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, addend, internal};
use crate::bytes::le_at;
use crate::error::Result;

/// The AArch64 encoder.
#[derive(Debug)]
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
    fn function(&self, _at: u64, calls: &[Call]) -> Result<Function> {
        let mut a = Asm::default();
        a.begin(0);
        a.w(SAVE_LR);
        a.prologue(16, &[(Reg::X30, -16)]);
        for call in calls {
            // The argument: a section symbol plus an offset, for data and
            // for a function of the same section alike.
            let (symbol, offset) = match call.arg {
                Arg::Data {
                    section, offset, ..
                } => (section, offset),
                Arg::Code { section, offset } => (section, offset),
            };
            let target = Target::Symbol(symbol);
            let offset = addend(offset)?;
            a.reloc(elf::R_AARCH64_ADR_PREL_PG_HI21, target, offset);
            a.w(ADRP_X0);
            a.reloc(elf::R_AARCH64_ADD_ABS_LO12_NC, target, offset);
            a.w(ADD_X0);
            a.call(Target::Symbol(call.callee));
        }
        a.w(RESTORE_LR);
        a.w(RET);
        a.function()
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
// The assembler: the shared core plus this CPU's fixups and instructions
// ---------------------------------------------------------------------------

/// How a branch encodes its word offset.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Branch {
    /// `b`, `bl`: 26 bits from bit 0.
    Imm26,
    /// `b.cond`, `cbz`, `cbnz`: 19 bits from bit 5.
    Imm19,
}

impl asm::Fixup for Branch {
    fn apply(self, code: &mut [u8], at: usize, target: usize) -> Result<()> {
        let broken = internal;
        let delta = (i64::try_from(target).map_err(|_| broken("offset"))?
            - i64::try_from(at).map_err(|_| broken("offset"))?)
            / 4;
        let (bits, shift) = match self {
            Branch::Imm26 => (26, 0),
            Branch::Imm19 => (19, 5),
        };
        let limit = 1i64 << (bits - 1);
        if !(-limit..limit).contains(&delta) {
            return Err(broken("a branch is out of range"));
        }
        let field = u32::try_from(delta & ((1 << bits) - 1)).map_err(|_| broken("field"))?;
        let word = code
            .get_mut(at..at + 4)
            .ok_or_else(|| broken("a branch past the end"))?;
        // Instructions are little-endian, whatever the data's byte order.
        let old = le_at::<u32>(word, 0).ok_or_else(|| broken("word"))?;
        word.copy_from_slice(&(old | (field << shift)).to_le_bytes());
        Ok(())
    }
}

/// The shared assembler core with AArch64's branches.
type Asm = asm::Asm<Branch>;

/// AArch64 instructions on top of the core: words, words with a
/// relocation, address computations, calls, branches, and the unwind rules
/// after a prologue (AArch64 functions get no epilogue rules from LLVM).
trait A64Asm {
    /// An instruction word (little-endian, whatever the data's byte order).
    fn w(&mut self, word: u32);
    /// The prologue is written: the CFA is `cfa` bytes above the stack
    /// pointer, and `saved` registers are at these CFA offsets.
    fn prologue(&mut self, cfa: i32, saved: &[(gimli::Register, i32)]);
    /// An instruction word with a relocation against `target`.
    fn rel(&mut self, word: u32, r_type: elf::RelocationType, target: Target);
    /// `adrp xN, target` then `add xN, xN, :lo12:target` (`adrp`, `add`:
    /// the words with the register filled in).
    fn address(&mut self, adrp: u32, add: u32, target: Target);
    /// `adrp x0, l` and `add x0, x0, :lo12:l` for a label of this
    /// section, relocated against the section.
    fn address_of(&mut self, l: Label);
    /// `bl target`
    fn call(&mut self, target: Target);
    /// A branch to `l`: `word` with its offset field zero.
    fn branch(&mut self, word: u32, l: Label, how: Branch);
}

impl A64Asm for Asm {
    fn w(&mut self, word: u32) {
        self.bytes(&word.to_le_bytes());
    }

    fn prologue(&mut self, cfa: i32, saved: &[(gimli::Register, i32)]) {
        self.cfa_offset(cfa);
        self.saved(saved);
    }

    fn rel(&mut self, word: u32, r_type: elf::RelocationType, target: Target) {
        self.reloc(r_type, target, 0);
        self.w(word);
    }

    fn address(&mut self, adrp: u32, add: u32, target: Target) {
        self.rel(adrp, elf::R_AARCH64_ADR_PREL_PG_HI21, target);
        self.rel(add, elf::R_AARCH64_ADD_ABS_LO12_NC, target);
    }

    fn address_of(&mut self, l: Label) {
        for (word, r_type) in [
            (ADRP_X0, elf::R_AARCH64_ADR_PREL_PG_HI21),
            (ADD_X0, elf::R_AARCH64_ADD_ABS_LO12_NC),
        ] {
            self.reloc_to(r_type, l);
            self.w(word);
        }
    }

    fn call(&mut self, target: Target) {
        self.rel(BL, elf::R_AARCH64_CALL26, target);
    }

    fn branch(&mut self, word: u32, l: Label, how: Branch) {
        self.fixup(how, l);
        self.w(word);
    }
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (docs/formats/wrapper-objects.md)
// ---------------------------------------------------------------------------

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
    a.call(Target::Runtime(name));
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
    a.begin(0);
    a.w(SAVE_LR);
    a.prologue(16, &[(Reg::X30, -16)]);
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.rel(
        0xf940_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // ldr x0, [x8, :lo12:handle]
    a.call(Target::Runtime(name));
    a.w(RESTORE_LR);
    a.w(RET);
    a.end()
}

/// The CUDA registration code of LLVM 22 for AArch64 (the same calls as on
/// x86-64; see there).
fn cuda_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());
    let reg = cuda_constructor(&mut a, globals, unreg);
    a.bind(unreg);
    let unreg_span = unregister(&mut a, "__cudaUnregisterFatBinary");
    let globals_span = cuda_globals(&mut a, globals);
    a.finish([reg, unreg_span, globals_span], &[])
}

/// The CUDA constructor (`.cuda.fatbin_reg`).
fn cuda_constructor(a: &mut Asm, globals: Label, unreg: Label) -> Span {
    a.begin(0);
    a.w(0xa9bf_4ffe); // stp x30, x19, [sp, #-16]!
    a.prologue(16, &[(Reg::X19, -8), (Reg::X30, -16)]);
    a.address(ADRP_X0, ADD_X0, Target::Wrapper); // x0 = &.fatbin_wrapper
    a.call(Target::Runtime("__cudaRegisterFatBinary"));
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.w(0xaa00_03f3); // mov x19, x0
    a.rel(
        0xf900_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // str x0, [x8, :lo12:handle]
    a.branch(BL, globals, Branch::Imm26);
    a.w(0xaa13_03e0); // mov x0, x19
    a.call(Target::Runtime("__cudaRegisterFatBinaryEnd"));
    a.address_of(unreg);
    a.call(Target::Runtime("atexit"));
    a.w(0xa8c1_4ffe); // ldp x30, x19, [sp], #16
    a.w(RET);
    a.end()
}

/// The CUDA entry loop (`.cuda.globals_reg`) at `globals`.
fn cuda_globals(a: &mut Asm, globals: Label) -> Span {
    let [func, next, check, managed, done] = [(); 5].map(|()| a.label());
    a.bind(globals);
    a.begin(0);
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__cudaRegisterFunction");
    loop_step(a, next, check, done, 0x7100_091f); // cmp w8, #2 (CUDA)
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
    handle_address_name(a);
    a.w(0xaa08_03e5); // mov x5, x8
    a.w(0x2a1f_03e7); // mov w7, wzr
    a.call(Target::Runtime("__cudaRegisterVar"));
    a.branch(B, next, Branch::Imm26);
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.w(0xf940_1aa1); // ldr x1, [x21, #0x30] (aux address)
    a.w(0xb940_2aa5); // ldr w5, [x21, #0x28] (data)
    a.w(0xaa13_03e0); // mov x0, x19
    a.w(0xaa08_03e4); // mov x4, x8
    a.call(Target::Runtime("__cudaRegisterManagedVar"));
    a.branch(B, next, Branch::Imm26);
    loop_epilogue(a, done);
    a.end()
}

/// The HIP registration code of LLVM 22 for AArch64: as CUDA's without the
/// end of registration, kind HIP (4), and surfaces and textures too (a
/// tree of compares on the entry type, no jump table).
fn hip_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());
    let reg = hip_constructor(&mut a, globals, unreg);
    a.bind(unreg);
    let unreg_span = unregister(&mut a, "__hipUnregisterFatBinary");
    let globals_span = hip_globals(&mut a, globals);
    a.finish([reg, unreg_span, globals_span], &[])
}

/// The HIP constructor (`.hip.fatbin_reg`).
fn hip_constructor(a: &mut Asm, globals: Label, unreg: Label) -> Span {
    a.begin(0);
    a.w(SAVE_LR);
    a.prologue(16, &[(Reg::X30, -16)]);
    a.address(ADRP_X0, ADD_X0, Target::Wrapper); // x0 = &.fatbin_wrapper
    a.call(Target::Runtime("__hipRegisterFatBinary"));
    a.rel(0x9000_0008, elf::R_AARCH64_ADR_PREL_PG_HI21, Target::Handle); // adrp x8, handle
    a.rel(
        0xf900_0100,
        elf::R_AARCH64_LDST64_ABS_LO12_NC,
        Target::Handle,
    ); // str x0, [x8, :lo12:handle]
    a.branch(BL, globals, Branch::Imm26);
    a.address_of(unreg);
    a.call(Target::Runtime("atexit"));
    a.w(RESTORE_LR);
    a.w(RET);
    a.end()
}

/// The HIP entry loop (`.hip.globals_reg`) at `globals`: a tree of
/// compares on the entry type, no jump table.
fn hip_globals(a: &mut Asm, globals: Label) -> Span {
    let [func, next, check, above1, global, surface, done] = [(); 7].map(|()| a.label());
    a.bind(globals);
    a.begin(0);
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__hipRegisterFunction");
    loop_step(a, next, check, done, 0x7100_111f); // cmp w8, #4 (HIP)
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
    a.call(Target::Runtime("__hipRegisterManagedVar"));
    a.branch(B, next, Branch::Imm26);
    a.bind(above1);
    a.w(0x7100_099f); // cmp w12, #2
    a.branch(B_EQ, surface, Branch::Imm19);
    a.w(0x7100_0d9f); // cmp w12, #3
    a.branch(B_NE, next, Branch::Imm19);
    // (Falls through for type 3.) A texture: __hipRegisterTexture(h, addr,
    // name, name, (u32) data, normalized, extern).
    a.w(0x5305_1565); // ubfx w5, w11, #5, #1 (normalized)
    handle_address_name(a);
    a.w(0x2a0a_03e4); // mov w4, w10
    a.w(0x2a09_03e6); // mov w6, w9
    a.call(Target::Runtime("__hipRegisterTexture"));
    a.branch(B, next, Branch::Imm26);
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.w(0x5304_1166); // ubfx w6, w11, #4, #1 (constant)
    handle_address_name(a);
    a.w(0x2a09_03e4); // mov w4, w9
    a.w(0xaa08_03e5); // mov x5, x8
    a.w(0x2a1f_03e7); // mov w7, wzr
    a.call(Target::Runtime("__hipRegisterVar"));
    a.branch(B, next, Branch::Imm26);
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    handle_address_name(a);
    a.w(0x2a0a_03e4); // mov w4, w10
    a.w(0x2a09_03e5); // mov w5, w9
    a.call(Target::Runtime("__hipRegisterSurface"));
    a.branch(B, next, Branch::Imm26);
    loop_epilogue(a, done);
    a.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    /// LLVM 22's constructor for one image (docs/formats/wrapper-objects.md): register
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
        let calls = super::super::register_calls((reg, atexit), (data, 0x20), (text, 0x24));
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
            .map(|r| (r.offset, r.r_type, r.target, r.addend))
            .collect();
        let [data, text, reg, atexit] = [data, text, reg, atexit].map(Target::Symbol);
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
