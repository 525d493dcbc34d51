//! ARM64 Windows, as LLVM 22's `llc` encodes the wrapper's functions for
//! `aarch64-pc-windows-msvc`.
//!
//! The calling convention is AAPCS64's, so the instructions are mostly
//! those of `arch::aarch64`; what differs is how llc saves registers
//! (x19 with x20, x21 with lr, in ascending order), the relocations
//! (`IMAGE_REL_ARM64_*`, each against the symbol it addresses: COFF has
//! no addends outside the instruction), and the unwind data: Windows
//! unwinds from `.pdata`, whose entry either holds a function's whole
//! unwind description in one word ("packed": a frame of `lr` alone), or
//! points at an `.xdata` record of unwind codes.
//!
//! ```text
//! str  x30, [sp, #-16]!        ; packed unwind data: CR = 1, frame 16
//! adrp x0, arg                 ; IMAGE_REL_ARM64_PAGEBASE_REL21 arg
//! add  x0, x0, :lo12:arg       ; IMAGE_REL_ARM64_PAGEOFFSET_12A arg
//! bl   callee                  ; IMAGE_REL_ARM64_BRANCH26 callee
//! ldr  x30, [sp], #16
//! ret
//! ```

use object::pe;

use super::asm::{self, Label, Target, Unwind};
use crate::error::Result;
use crate::wrap::arch::Fatbin;
use crate::wrap::arch::aarch64::Branch;

/// `str x30, [sp, #-16]!`
const SAVE_LR: u32 = 0xf81f_0ffe;
/// `ldr x30, [sp], #16`
const RESTORE_LR: u32 = 0xf841_07fe;
/// `adrp x0, 0`
const ADRP_X0: u32 = 0x9000_0000;
/// `add x0, x0, #0`
const ADD_X0: u32 = 0x9100_0000;
/// `adrp x8, 0`
const ADRP_X8: u32 = 0x9000_0008;
/// `bl 0`
const BL: u32 = 0x9400_0000;
/// `ret`
const RET: u32 = 0xd65f_03c0;
/// `b 0`
const B: u32 = 0x1400_0000;
/// `b.eq`, `b.ne`, `b.gt`: `b.cond 0` with the condition.
const B_EQ: u32 = 0x5400_0000;
const B_NE: u32 = 0x5400_0001;
const B_GT: u32 = 0x5400_000c;

/// The assembler core with AArch64's branches.
type Asm = asm::Asm<Branch>;

/// An instruction word.
fn w(a: &mut Asm, word: u32) {
    a.bytes(&word.to_le_bytes());
}

/// An instruction word relocated against `name`.
fn rel(a: &mut Asm, word: u32, r_type: u16, name: &str) {
    a.reloc(r_type, Target::Named(name.to_string()));
    w(a, word);
}

/// `adrp` then `add` (the words with their registers) of `name`'s address.
fn address(a: &mut Asm, adrp: u32, add: u32, name: &str) {
    rel(a, adrp, pe::IMAGE_REL_ARM64_PAGEBASE_REL21.0, name);
    rel(a, add, pe::IMAGE_REL_ARM64_PAGEOFFSET_12A.0, name);
}

/// `bl name`
fn call(a: &mut Asm, name: &str) {
    rel(a, BL, pe::IMAGE_REL_ARM64_BRANCH26.0, name);
}

/// A branch to `l`: `word` with its offset field zero.
fn branch(a: &mut Asm, word: u32, l: Label, how: Branch) {
    a.fixup(how, l);
    w(a, word);
}

// ---------------------------------------------------------------------------
// Unwind data (the ARM64 exception-handling ABI's `.pdata` and `.xdata`)
// ---------------------------------------------------------------------------

/// The packed `.pdata` word of a function of `len` bytes whose prologue is
/// `str x30, [sp, #-16]!`: Flag 1 (packed), FunctionLength in words,
/// RegF = RegI = 0, H = 0, CR = 1 (lr saved alone), FrameSize in 16-byte
/// units.
fn packed_lr(len: usize) -> Unwind {
    let words = u32::try_from(len / 4).unwrap_or(0);
    Unwind::Packed(1 | (words << 2) | (1 << 21) | (1 << 23))
}

/// `save_reg`: `str x(19 + n), [sp, #off]`.
fn save_reg(n: u8, off: u8) -> [u8; 2] {
    (0xd000 | (u16::from(n) << 6) | u16::from(off / 8)).to_be_bytes()
}

/// `save_reg_x`: `str x(19 + n), [sp, #-off]!`.
fn save_reg_x(n: u8, off: u8) -> [u8; 2] {
    (0xd400 | (u16::from(n) << 5) | u16::from(off / 8 - 1)).to_be_bytes()
}

/// `save_regp`: `stp x(19 + n), x(20 + n), [sp, #off]`.
fn save_regp(n: u8, off: u8) -> [u8; 2] {
    (0xc800 | (u16::from(n) << 6) | u16::from(off / 8)).to_be_bytes()
}

/// `save_lrpair`: `stp x(19 + 2n), lr, [sp, #off]`.
fn save_lrpair(n: u8, off: u8) -> [u8; 2] {
    (0xd600 | (u16::from(n) << 6) | u16::from(off / 8)).to_be_bytes()
}

/// `alloc_s`: `sub sp, sp, #size` (size < 512).
fn alloc_s(size: u8) -> u8 {
    size / 16
}

/// The `end` code.
const END: u8 = 0xe4;
/// The `nop` code, which pads the codes to whole words.
const NOP: u8 = 0xe3;

/// An `.xdata` record for a function of `len` bytes with one epilogue
/// that mirrors the prologue, whose unwind codes (last instruction first,
/// then `end`) are `codes`: the header word (FunctionLength in words,
/// Version 0, X = 0, E = 1 with the epilogue's codes at index 0, the
/// count of code words), then the codes padded with `nop`.
fn xdata(len: usize, codes: &[u8]) -> Unwind {
    let mut codes = codes.to_vec();
    while !codes.len().is_multiple_of(4) {
        codes.push(NOP);
    }
    let words = u32::try_from(len / 4).unwrap_or(0);
    let code_words = u32::try_from(codes.len() / 4).unwrap_or(0);
    let header = words | (1 << 21) | (code_words << 27);
    let mut out = header.to_le_bytes().to_vec();
    out.extend_from_slice(&codes);
    Unwind::Xdata(out)
}

// ---------------------------------------------------------------------------
// The functions
// ---------------------------------------------------------------------------

/// A function that saves lr alone: `str x30, [sp, #-16]!`, `body`, then
/// `ldr x30, [sp], #16` and `ret`; packed unwind data.
fn lr_only(a: &mut Asm, name: &str, body: impl FnOnce(&mut Asm)) -> Result<()> {
    a.begin(name);
    let start = a.here();
    w(a, SAVE_LR);
    body(a);
    w(a, RESTORE_LR);
    w(a, RET);
    let len = a.here() - start;
    a.end(packed_lr(len))
}

/// The OpenMP constructor and destructor: register the descriptor and
/// `atexit` the destructor; unregister it.
pub(super) fn openmp_code() -> Result<asm::Code> {
    let mut a = Asm::default();
    let desc = ".omp_offloading.descriptor";
    let unreg = ".omp_offloading.descriptor_unreg";
    lr_only(&mut a, ".omp_offloading.descriptor_reg", |a| {
        address(a, ADRP_X0, ADD_X0, desc); // x0 = &descriptor
        call(a, "__tgt_register_lib");
        address(a, ADRP_X0, ADD_X0, unreg); // x0 = the destructor
        call(a, "atexit");
    })?;
    lr_only(&mut a, unreg, |a| {
        address(a, ADRP_X0, ADD_X0, desc);
        call(a, "__tgt_unregister_lib");
    })?;
    a.finish(&[])
}

/// The CUDA or HIP registration code of LLVM 22 for ARM64 Windows: the
/// constructor, the `atexit` handler and the entry loop, one after the
/// other (4-aligned, no padding).
pub(super) fn fatbin_code(which: Fatbin) -> Result<asm::Code> {
    let p = match which {
        Fatbin::Cuda => "cuda",
        Fatbin::Hip => "hip",
    };
    let handle = format!(".{p}.binary_handle");
    let unreg = format!(".{p}.fatbin_unreg");
    let globals = format!(".{p}.globals_reg");
    let mut a = Asm::default();
    let reg = format!(".{p}.fatbin_reg");
    match which {
        Fatbin::Cuda => cuda_constructor(&mut a, &reg, &handle, &unreg)?,
        Fatbin::Hip => lr_only(&mut a, &reg, |a| {
            address(a, ADRP_X0, ADD_X0, ".fatbin_wrapper");
            call(a, "__hipRegisterFatBinary");
            rel(a, ADRP_X8, pe::IMAGE_REL_ARM64_PAGEBASE_REL21.0, &handle); // adrp x8, handle
            // str x0, [x8, :lo12:handle]
            rel(
                a,
                0xf900_0100,
                pe::IMAGE_REL_ARM64_PAGEOFFSET_12L.0,
                &handle,
            );
            call(a, &globals);
            address(a, ADRP_X0, ADD_X0, &unreg); // x0 = the handler
            call(a, "atexit");
        })?,
    }
    lr_only(&mut a, &unreg, |a| {
        rel(a, ADRP_X8, pe::IMAGE_REL_ARM64_PAGEBASE_REL21.0, &handle); // adrp x8, handle
        // ldr x0, [x8, :lo12:handle]
        rel(
            a,
            0xf940_0100,
            pe::IMAGE_REL_ARM64_PAGEOFFSET_12L.0,
            &handle,
        );
        call(a, &format!("__{p}UnregisterFatBinary"));
    })?;
    match which {
        Fatbin::Cuda => cuda_globals(&mut a, &globals)?,
        Fatbin::Hip => hip_globals(&mut a, &globals)?,
    }
    a.finish(&[])
}

/// The CUDA constructor, which keeps the handle in x19 for the call that
/// ends the registration.
fn cuda_constructor(a: &mut Asm, name: &str, handle: &str, unreg: &str) -> Result<()> {
    a.begin(name);
    let start = a.here();
    w(a, 0xf81f_0ff3); // str x19, [sp, #-16]!
    w(a, 0xf900_07fe); // str x30, [sp, #8]
    address(a, ADRP_X0, ADD_X0, ".fatbin_wrapper"); // x0 = &.fatbin_wrapper
    call(a, "__cudaRegisterFatBinary");
    rel(a, ADRP_X8, pe::IMAGE_REL_ARM64_PAGEBASE_REL21.0, handle); // adrp x8, handle
    w(a, 0xaa00_03f3); // mov x19, x0
    rel(a, 0xf900_0100, pe::IMAGE_REL_ARM64_PAGEOFFSET_12L.0, handle); // str x0, [x8, :lo12:handle]
    call(a, ".cuda.globals_reg");
    w(a, 0xaa13_03e0); // mov x0, x19
    call(a, "__cudaRegisterFatBinaryEnd");
    address(a, ADRP_X0, ADD_X0, unreg); // x0 = the handler
    call(a, "atexit");
    w(a, 0xf940_07fe); // ldr x30, [sp, #8]
    w(a, 0xf841_07f3); // ldr x19, [sp], #16
    w(a, RET);
    let len = a.here() - start;
    let codes = [save_reg(11, 8), save_reg_x(0, 16)].concat();
    a.end(xdata(len, &[&codes[..], &[END]].concat()))
}

/// The entry loop's prologue: `sub sp, sp, #48`, `stp x19, x20, [sp,
/// #16]`, `stp x21, x30, [sp, #32]`; then the bounds (x20 = stop, x21 =
/// start), the early exit to `done`, the handle in x19, and a branch to
/// `check`.
fn loop_prologue(a: &mut Asm, done: Label, check: Label) {
    w(a, 0xd100_c3ff); // sub sp, sp, #0x30
    w(a, 0xa901_53f3); // stp x19, x20, [sp, #0x10]
    w(a, 0xa902_7bf5); // stp x21, x30, [sp, #0x20]
    let stop = "__stop_llvm_offload_entries";
    let start = "__start_llvm_offload_entries";
    address(a, 0x9000_0014, 0x9100_0294, stop); // x20 = __stop_…
    address(a, 0x9000_0008, 0x9100_0108, start); // x8 = __start_…
    w(a, 0xeb14_011f); // cmp x8, x20
    branch(a, B_EQ, done, Branch::Imm19);
    w(a, 0xaa00_03f3); // mov x19, x0 (the handle)
    address(a, 0x9000_0015, 0x9100_02b5, start); // x21 = __start_…
    branch(a, B, check, Branch::Imm26);
}

/// The loop's unwind codes: `stp x21, lr, [sp, #32]`, `stp x19, x20,
/// [sp, #16]`, `sub sp, sp, #48`, end.
fn loop_unwind(len: usize) -> Unwind {
    let codes = [
        &save_lrpair(1, 32)[..],
        &save_regp(0, 16),
        &[alloc_s(48), END],
    ]
    .concat();
    xdata(len, &codes)
}

/// The handle and an entry's address and name as the first four arguments
/// (`h, addr, name, name`).
fn handle_address_name(a: &mut Asm) {
    w(a, 0xaa13_03e0); // mov x0, x19
    w(a, 0xaa02_03e1); // mov x1, x2
    w(a, 0xaa03_03e2); // mov x2, x3
}

/// A kernel: `RegisterFunction(h, addr, name, name, -1, 0 × 5)`, the last
/// two zeros on the stack.
fn register_function(a: &mut Asm, name: &str) {
    w(a, 0xaa1f_03e5); // mov x5, xzr
    w(a, 0xaa1f_03e6); // mov x6, xzr
    w(a, 0xaa1f_03e7); // mov x7, xzr
    handle_address_name(a);
    w(a, 0x1280_0004); // mov w4, #-1
    w(a, 0xa900_7fff); // stp xzr, xzr, [sp]
    call(a, name);
}

/// At `next` the next entry (x21 += 56) or the end; at `check` the kind
/// check (`cmp w8, #kind` word), then the entry's name (x3), size (x8)
/// and address (x2); a zero size is a kernel (`cbz x8, func`).
fn loop_step(a: &mut Asm, [next, check, done, func]: [Label; 4], cmp_kind: u32) {
    a.bind(next);
    w(a, 0x9100_e2b5); // add x21, x21, #0x38
    w(a, 0xeb14_02bf); // cmp x21, x20
    branch(a, B_EQ, done, Branch::Imm19);
    a.bind(check);
    w(a, 0x7940_16a8); // ldrh w8, [x21, #0xa] (kind)
    w(a, cmp_kind);
    branch(a, B_NE, next, Branch::Imm19);
    w(a, 0xa941_a2a3); // ldp x3, x8, [x21, #0x18] (name, size)
    w(a, 0xf940_0aa2); // ldr x2, [x21, #0x10] (address)
    branch(a, 0xb400_0008, func, Branch::Imm19); // cbz x8, func
}

/// The loop's epilogue at `done`; the function ends.
fn loop_epilogue(a: &mut Asm, done: Label, start: usize) -> Result<()> {
    a.bind(done);
    w(a, 0xa942_7bf5); // ldp x21, x30, [sp, #0x20]
    w(a, 0xa941_53f3); // ldp x19, x20, [sp, #0x10]
    w(a, 0x9100_c3ff); // add sp, sp, #0x30
    w(a, RET);
    let len = a.here() - start;
    a.end(loop_unwind(len))
}

/// The CUDA entry loop (`.cuda.globals_reg`): kernels, variables and
/// managed variables.
fn cuda_globals(a: &mut Asm, name: &str) -> Result<()> {
    let [next, check, done, func, managed] = [(); 5].map(|()| a.label());
    a.begin(name);
    let start = a.here();
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__cudaRegisterFunction");
    loop_step(a, [next, check, done, func], 0x7100_091f); // cmp w8, #2
    w(a, 0xb940_0ea9); // ldr w9, [x21, #0xc] (flags)
    w(a, 0x1200_092a); // and w10, w9, #0x7 (the variable's type)
    w(a, 0x7100_055f); // cmp w10, #1
    branch(a, B_EQ, managed, Branch::Imm19);
    branch(a, 0x3500_000a, next, Branch::Imm19); // cbnz w10, next
    w(a, 0x5303_0d24); // ubfx w4, w9, #3, #1 (extern)
    w(a, 0x5304_1126); // ubfx w6, w9, #4, #1 (constant)
    handle_address_name(a);
    w(a, 0xaa08_03e5); // mov x5, x8 (size)
    w(a, 0x2a1f_03e7); // mov w7, wzr
    call(a, "__cudaRegisterVar");
    branch(a, B, next, Branch::Imm26);
    a.bind(managed);
    w(a, 0xf940_1aa1); // ldr x1, [x21, #0x30] (aux_addr)
    w(a, 0xb940_2aa5); // ldr w5, [x21, #0x28] (alignment)
    w(a, 0xaa13_03e0); // mov x0, x19
    w(a, 0xaa08_03e4); // mov x4, x8 (size)
    call(a, "__cudaRegisterManagedVar");
    branch(a, B, next, Branch::Imm26);
    loop_epilogue(a, done, start)
}

/// The HIP entry loop (`.hip.globals_reg`): kernels, then by the
/// variable's type a variable, a managed variable, a surface or a
/// texture, in llc's branch order.
fn hip_globals(a: &mut Asm, name: &str) -> Result<()> {
    let [next, check, done, func] = [(); 4].map(|()| a.label());
    let [above_one, var, surface] = [(); 3].map(|()| a.label());
    a.begin(name);
    let start = a.here();
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__hipRegisterFunction");
    loop_step(a, [next, check, done, func], 0x7100_111f); // cmp w8, #4
    w(a, 0xb940_0eab); // ldr w11, [x21, #0xc] (flags)
    w(a, 0xb940_2aaa); // ldr w10, [x21, #0x28] (data)
    w(a, 0x1200_096c); // and w12, w11, #0x7 (the variable's type)
    w(a, 0x5303_0d69); // ubfx w9, w11, #3, #1 (extern)
    w(a, 0x7100_059f); // cmp w12, #1
    branch(a, B_GT, above_one, Branch::Imm19);
    branch(a, 0x3400_000c, var, Branch::Imm19); // cbz w12, var
    w(a, 0x7100_059f); // cmp w12, #1
    branch(a, B_NE, next, Branch::Imm19);
    // Type 1, a managed variable: RegisterManagedVar(h, aux_addr, addr,
    // name, size, align).
    w(a, 0xf940_1aa1); // ldr x1, [x21, #0x30] (aux_addr)
    w(a, 0xaa13_03e0); // mov x0, x19
    w(a, 0xaa08_03e4); // mov x4, x8 (size)
    w(a, 0x2a0a_03e5); // mov w5, w10 (alignment)
    call(a, "__hipRegisterManagedVar");
    branch(a, B, next, Branch::Imm26);
    a.bind(above_one);
    w(a, 0x7100_099f); // cmp w12, #2
    branch(a, B_EQ, surface, Branch::Imm19);
    w(a, 0x7100_0d9f); // cmp w12, #3
    branch(a, B_NE, next, Branch::Imm19);
    // Type 3, a texture: RegisterTexture(h, addr, name, name, dim,
    // normalized, extern).
    w(a, 0x5305_1565); // ubfx w5, w11, #5, #1 (normalized)
    handle_address_name(a);
    w(a, 0x2a0a_03e4); // mov w4, w10 (dim)
    w(a, 0x2a09_03e6); // mov w6, w9 (extern)
    call(a, "__hipRegisterTexture");
    branch(a, B, next, Branch::Imm26);
    // Type 0, a variable: RegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(var);
    w(a, 0x5304_1166); // ubfx w6, w11, #4, #1 (constant)
    handle_address_name(a);
    w(a, 0x2a09_03e4); // mov w4, w9 (extern)
    w(a, 0xaa08_03e5); // mov x5, x8 (size)
    w(a, 0x2a1f_03e7); // mov w7, wzr
    call(a, "__hipRegisterVar");
    branch(a, B, next, Branch::Imm26);
    // Type 2, a surface: RegisterSurface(h, addr, name, name, dim,
    // extern).
    a.bind(surface);
    handle_address_name(a);
    w(a, 0x2a0a_03e4); // mov w4, w10 (dim)
    w(a, 0x2a09_03e5); // mov w5, w9 (extern)
    call(a, "__hipRegisterSurface");
    branch(a, B, next, Branch::Imm26);
    loop_epilogue(a, done, start)
}
