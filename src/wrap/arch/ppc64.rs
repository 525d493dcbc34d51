//! 64-bit PowerPC, little-endian (ELFv2 ABI), as LLVM 22's `llc
//! -relocation-model=pic` encodes the wrapper's functions (docs/formats/wrapper-objects.md
//! §3, Appendix B).
//!
//! Every function has a global entry point that computes the TOC pointer
//! (r2) from its own address in r12, and a local entry point 8 bytes
//! further on, which callers in the same object use (local `STT_FUNC`
//! symbols carry that offset in `st_other`):
//!
//! ```text
//! addis 2, 12, 0        ; R_PPC64_REL16_HA .TOC.
//! addi  2, 2, 0         ; R_PPC64_REL16_LO .TOC.+4
//! mflr  0               ; the link register is saved in the caller's frame
//! stdu  1, -N(1)
//! std   0, N+16(1)
//! …
//! addis 3, 2, 0         ; R_PPC64_TOC16_HA x  (an address: TOC-relative)
//! addi  3, 3, 0         ; R_PPC64_TOC16_LO x
//! bl    f               ; R_PPC64_REL24 f
//! nop                   ; the linker's slot to restore r2 after a call
//! …                     ;   through a PLT stub
//! addi  1, 1, N
//! ld    0, 16(1)
//! mtlr  0
//! blr
//! .long 0; .quad 0      ; LLVM's stand-in for the traceback table, part
//!                       ;   of the function
//! ```
//!
//! Functions are 16-aligned, padded with `nop`s. Instructions are written
//! little-endian: this row serves `powerpc64le` only.
//!
//! llc runs LLVM's GlobalMerge pass for this CPU, so the OpenMP image
//! array and descriptor (and the ROCm image infos) are merged into private
//! globals of `.data.rel.ro`: a member's address is its global's
//! (TOC-relative, against the section) plus an `addi` of its offset in it.
//! A merged argument ([`Arg::Data`] with `merged`) names its global by the
//! symbol in `section` (the caller's stand-in for the global, relocated
//! against the section symbol plus the global's offset) and gives its
//! `offset` from the global's start.

use gimli::PowerPc64 as Reg;
use object::elf;

use super::asm::{self, Label};
use super::code::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, addend, internal};
use crate::error::Result;

/// The powerpc64le encoder.
#[derive(Debug)]
pub(crate) struct Ppc64;

/// `addis 2, 12, 0` (with `R_PPC64_REL16_HA .TOC.`)
const ADDIS_TOC: u32 = 0x3c4c_0000;
/// `addi 2, 2, 0` (with `R_PPC64_REL16_LO .TOC.+4`)
const ADDI_TOC: u32 = 0x3842_0000;
/// `mflr 0`
const MFLR: u32 = 0x7c08_02a6;
/// `mtlr 0`
const MTLR: u32 = 0x7c08_03a6;
/// `ld 0, 16(1)`: the saved link register, once the frame is gone.
const LD_LR: u32 = 0xe801_0010;
/// `blr`
const BLR: u32 = 0x4e80_0020;
/// `nop` (`ori 0, 0, 0`)
const NOP: u32 = 0x6000_0000;
/// `bl 0`
const BL: u32 = 0x4800_0001;
/// `b 0`
const B: u32 = 0x4800_0000;
/// `addis 3, 2, 0`
const ADDIS_R3: u32 = 0x3c62_0000;
/// `addi 3, 3, 0`
const ADDI_R3: u32 = 0x3863_0000;
/// `mr 3, 30`
const MR_R3_R30: u32 = 0x7fc3_f378;
/// `bt 2, 0` (branch if equal, cr0)
const BEQ: u32 = 0x4182_0000;
/// `bf 2, 0` (branch if not equal, cr0)
const BNE: u32 = 0x4082_0000;
/// `bf 1, 0` (branch if not greater, cr0)
const BLE: u32 = 0x4081_0000;
/// `bf 0, 0` (branch if not less, cr0)
const BGE: u32 = 0x4080_0000;

impl Cpu for Ppc64 {
    fn function(&self, _at: u64, calls: &[Call]) -> Result<Function> {
        let merged = calls
            .iter()
            .filter(|c| matches!(c.arg, Arg::Data { merged: true, .. }))
            .count();
        if merged >= 2 {
            return based_function(calls);
        }
        let mut a = Asm::default();
        a.begin(0);
        a.toc();
        a.ws(&[MFLR, 0xf821_ffe1, 0xf801_0030]); // mflr 0; stdu 1, -32(1); std 0, 48(1)
        a.prologue(32, &[]);
        for call in calls {
            match call.arg {
                // Data in a merged global (docs/formats/wrapper-objects.md: llc's
                // GlobalMerge on this CPU): the global's address, then the
                // member's offset added.
                Arg::Data {
                    section,
                    offset,
                    merged: true,
                    ..
                } => {
                    a.address(Target::Symbol(section), 0);
                    if offset != 0 {
                        // addi 3, 3, imm
                        a.w(ADDI_R3 | imm16(offset)?);
                    }
                }
                // A global of its own: its address.
                Arg::Data {
                    section, offset, ..
                } => a.address(Target::Symbol(section), addend(offset)?),
                Arg::Code { section, offset } => {
                    a.address(Target::Symbol(section), addend(offset)?);
                }
            }
            a.call(Target::Symbol(call.callee));
        }
        a.w(0x3821_0020); // addi 1, 1, 32
        a.w(LD_LR);
        a.ret();
        a.function()
    }

    fn padding(&self, len: usize) -> Vec<u8> {
        NOP.to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect()
    }

    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode> {
        let names = match which {
            Fatbin::Cuda => Names {
                register: "__cudaRegisterFatBinary",
                unregister: "__cudaUnregisterFatBinary",
            },
            Fatbin::Hip => Names {
                register: "__hipRegisterFatBinary",
                unregister: "__hipUnregisterFatBinary",
            },
        };
        let mut a = Asm::default();
        let (globals, unreg) = (a.label(), a.label());
        let reg = match which {
            Fatbin::Cuda => cuda_constructor(&mut a, &names, unreg),
            Fatbin::Hip => hip_constructor(&mut a, &names, unreg),
        };
        a.align16();
        a.bind(unreg);
        let unreg_span = unregister(&mut a, names.unregister);
        a.align16();
        a.bind(globals);
        let globals_span = match which {
            Fatbin::Cuda => cuda_globals(&mut a),
            Fatbin::Hip => hip_globals(&mut a),
        };
        a.finish([reg, unreg_span, globals_span], &[])
    }
}

/// The runtime functions that differ between CUDA and HIP in the
/// constructor and the `atexit` handler.
struct Names {
    register: &'static str,
    unregister: &'static str,
}

// ---------------------------------------------------------------------------
// The assembler: the shared core plus this CPU's fixups and instructions
// ---------------------------------------------------------------------------

/// How a branch encodes its byte offset.
#[derive(Debug, Clone, Copy)]
enum Branch {
    /// `b`, `bl`: a 26-bit signed offset in bits 2–25.
    I,
    /// `bc` (`bt`, `bf`): a 16-bit signed offset in bits 2–15.
    B,
}

impl asm::Fixup for Branch {
    fn apply(self, code: &mut [u8], at: usize, target: usize) -> Result<()> {
        let broken = internal;
        let delta = i64::try_from(target).map_err(|_| broken("offset"))?
            - i64::try_from(at).map_err(|_| broken("offset"))?;
        let bits = match self {
            Branch::I => 26,
            Branch::B => 16,
        };
        let limit = 1i64 << (bits - 1);
        if !(-limit..limit).contains(&delta) {
            return Err(broken("a branch is out of range"));
        }
        let mask = (1i64 << bits) - 4;
        let field = u32::try_from(delta & mask).map_err(|_| broken("field"))?;
        let word = code
            .get_mut(at..at + 4)
            .ok_or_else(|| broken("a branch past the end"))?;
        let old = crate::bytes::le_at::<u32>(word, 0).ok_or_else(|| broken("word"))?;
        word.copy_from_slice(&(old | field).to_le_bytes());
        Ok(())
    }
}

/// An offset in a merged global as the 16-bit immediate of an `addi`.
fn imm16(offset: u64) -> Result<u32> {
    let imm = i16::try_from(offset).map_err(|_| internal("a data offset does not fit addi"))?;
    Ok(u32::from(imm.cast_unsigned()))
}

/// A function whose calls take several members of merged globals (the
/// ROCm constructor: each image info, then the descriptor), as llc lays
/// it out. Each merged global is named by the symbol its arguments give as
/// `section` (their offsets are from its start). The global of the last
/// call (the descriptor's) has its address computed once into r30, where
/// it is first used (r30 saved below a 48-byte frame); each other merged
/// global (past 1022 images) into r29 where its run of calls starts (r29
/// saved too, below a 64-byte frame). Each argument is then `addi 3, r,
/// offset` (`mr 3, r` at offset 0); one merged with nothing is addressed
/// on its own.
fn based_function(calls: &[Call]) -> Result<Function> {
    let global = |c: &Call| match c.arg {
        Arg::Data {
            section,
            merged: true,
            ..
        } => Some(section),
        _ => None,
    };
    let last = calls
        .last()
        .and_then(global)
        .ok_or_else(|| internal("the last call's argument is not merged"))?;
    let r29 = calls.iter().filter_map(global).any(|g| g != last);
    let mut a = Asm::default();
    saved_frame(&mut a, r29);
    let mut lr_saved = false;
    let mut r30_set = false;
    let mut in_r29 = None;
    for call in calls {
        let (section, offset) = match call.arg {
            Arg::Data {
                section,
                offset,
                merged: true,
                ..
            } => (section, offset),
            Arg::Data {
                section, offset, ..
            } if lr_saved => {
                a.address(Target::Symbol(section), addend(offset)?);
                a.call(Target::Symbol(call.callee));
                continue;
            }
            _ => return Err(internal("a call of another kind among merged arguments")),
        };
        let reg = if section == last { 30 } else { 29 };
        let set = match reg {
            30 => r30_set,
            _ => in_r29 == Some(section),
        };
        if !set {
            a.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, Target::Symbol(section), 0);
            if !lr_saved {
                // std 0, 64(1) or 80(1): the link register, in the
                // caller's frame.
                a.w(if r29 { 0xf801_0050 } else { 0xf801_0040 });
                lr_saved = true;
            }
            // addi reg, 3, 0
            let target = Target::Symbol(section);
            a.rel(0x3803_0000 | reg << 21, elf::R_PPC64_TOC16_LO, target, 0);
            match reg {
                30 => r30_set = true,
                _ => in_r29 = Some(section),
            }
        }
        if offset == 0 {
            // mr 3, reg
            a.w(0x7c03_0378 | reg << 21 | reg << 11);
        } else {
            // addi 3, reg, imm
            a.w(0x3860_0000 | reg << 16 | imm16(offset)?);
        }
        a.call(Target::Symbol(call.callee));
    }
    if r29 {
        a.ws(&[
            0x3821_0040, // addi 1, 1, 64
            LD_LR,
            0xebc1_fff0, // ld 30, -16(1)
            0xeba1_ffe8, // ld 29, -24(1)
        ]);
    } else {
        a.ws(&[
            0x3821_0030, // addi 1, 1, 48
            LD_LR,
            0xebc1_fff0, // ld 30, -16(1)
        ]);
    }
    a.ret();
    a.function()
}

/// The shared assembler core with PowerPC's branches.
type Asm = asm::Asm<Branch>;

/// PowerPC instructions on top of the core.
trait PpcAsm {
    /// An instruction word (little-endian).
    fn w(&mut self, word: u32);
    /// Instruction words, in order.
    fn ws(&mut self, words: &[u32]);
    /// An instruction word with a relocation against `target`.
    fn rel(&mut self, word: u32, r_type: elf::RelocationType, target: Target, addend: i64);
    /// The global entry: r2 = `.TOC.`, from r12.
    fn toc(&mut self);
    /// `addis 3, 2, 0` and `addi 3, 3, 0`: r3 = the TOC-relative address
    /// of `target` (plus `addend`).
    fn address(&mut self, target: Target, addend: i64);
    /// `bl target` and the `nop` the linker may turn into a TOC restore.
    fn call(&mut self, target: Target);
    /// A branch to `l`: `word` with its offset field zero.
    fn branch(&mut self, word: u32, l: Label, how: Branch);
    /// The frame is set up: the CFA is `cfa` bytes above r1, the link
    /// register is saved 16 bytes above it, and `saved` registers at these
    /// CFA offsets.
    fn prologue(&mut self, cfa: i32, saved: &[(gimli::Register, i32)]);
    /// The end of a function: the return, then the word and doubleword of
    /// zeros LLVM writes in place of a traceback table.
    fn ret(&mut self);
    /// `nop`s up to the next multiple of 16 (where functions start).
    fn align16(&mut self);
}

impl PpcAsm for Asm {
    fn w(&mut self, word: u32) {
        self.bytes(&word.to_le_bytes());
    }

    fn ws(&mut self, words: &[u32]) {
        for &w in words {
            self.w(w);
        }
    }

    fn rel(&mut self, word: u32, r_type: elf::RelocationType, target: Target, addend: i64) {
        // Little-endian: the 16-bit field of an instruction is at the
        // instruction's own offset.
        self.reloc(r_type, target, addend);
        self.w(word);
    }

    fn toc(&mut self) {
        let toc = Target::Runtime(".TOC.");
        self.rel(ADDIS_TOC, elf::R_PPC64_REL16_HA, toc, 0);
        self.rel(ADDI_TOC, elf::R_PPC64_REL16_LO, toc, 4);
    }

    fn address(&mut self, target: Target, addend: i64) {
        self.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, target, addend);
        self.rel(ADDI_R3, elf::R_PPC64_TOC16_LO, target, addend);
    }

    fn call(&mut self, target: Target) {
        self.rel(BL, elf::R_PPC64_REL24, target, 0);
        self.w(NOP);
    }

    fn branch(&mut self, word: u32, l: Label, how: Branch) {
        self.fixup(how, l);
        self.w(word);
    }

    fn prologue(&mut self, cfa: i32, saved: &[(gimli::Register, i32)]) {
        self.cfa_offset(cfa);
        self.saved(&[(Reg::LR, 16)]);
        self.saved(saved);
    }

    fn ret(&mut self) {
        self.ws(&[MTLR, BLR, 0, 0, 0]);
    }

    fn align16(&mut self) {
        while !self.here().is_multiple_of(16) {
            self.w(NOP);
        }
    }
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (docs/formats/wrapper-objects.md)
// ---------------------------------------------------------------------------

/// The start of a function that keeps a value in r30: the TOC prologue,
/// the link register read, r30 saved below a 48-byte frame, the frame.
fn r30_frame(a: &mut Asm) {
    saved_frame(a, false);
}

/// The start of a function that keeps values in r30, and in r29 too if
/// `r29`: the TOC prologue, the link register read, the registers saved
/// below the frame (48 bytes, or 64 with r29), the frame.
fn saved_frame(a: &mut Asm, r29: bool) {
    a.begin(0);
    a.toc();
    a.w(MFLR);
    if r29 {
        a.prologue(64, &[(Reg::R29, -24), (Reg::R30, -16)]);
        a.w(0xfba1_ffe8); // std 29, -24(1)
        a.w(0xfbc1_fff0); // std 30, -16(1)
        a.w(0xf821_ffc1); // stdu 1, -64(1)
    } else {
        a.prologue(48, &[(Reg::R30, -16)]);
        a.w(0xfbc1_fff0); // std 30, -16(1)
        a.w(0xf821_ffd1); // stdu 1, -48(1)
    }
}

/// The CUDA constructor (`.cuda.fatbin_reg`): register the fatbin, keep
/// the handle (in r30 and in `.bss`), the entry loop, the end of
/// registration, `atexit(unreg)`.
fn cuda_constructor(a: &mut Asm, names: &Names, unreg: Label) -> Span {
    r30_frame(a);
    a.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, Target::Wrapper, 0);
    a.w(0xf801_0040); // std 0, 64(1)
    a.rel(ADDI_R3, elf::R_PPC64_TOC16_LO, Target::Wrapper, 0);
    a.call(Target::Runtime(names.register));
    a.w(0x7c7e_1b78); // mr 30, 3
    a.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, Target::Handle, 0);
    a.rel(0xfbc3_0000, elf::R_PPC64_TOC16_LO_DS, Target::Handle, 0); // std 30, 0(3)
    a.w(MR_R3_R30);
    // A local call: same TOC, no nop.
    a.rel(BL, elf::R_PPC64_REL24, Target::Globals, 0);
    a.w(MR_R3_R30);
    a.call(Target::Runtime("__cudaRegisterFatBinaryEnd"));
    atexit(a, unreg);
    a.w(0x3821_0030); // addi 1, 1, 48
    a.w(LD_LR);
    a.w(0xebc1_fff0); // ld 30, -16(1)
    a.ret();
    a.end()
}

/// The HIP constructor (`.hip.fatbin_reg`): as CUDA's without the end of
/// registration, so the handle needs no callee-saved register.
fn hip_constructor(a: &mut Asm, names: &Names, unreg: Label) -> Span {
    a.begin(0);
    a.toc();
    a.ws(&[MFLR, 0xf821_ffe1, 0xf801_0030]); // mflr 0; stdu 1, -32(1); std 0, 48(1)
    a.prologue(32, &[]);
    a.address(Target::Wrapper, 0);
    a.call(Target::Runtime(names.register));
    a.rel(0x3c82_0000, elf::R_PPC64_TOC16_HA, Target::Handle, 0); // addis 4, 2, 0
    a.rel(0xf864_0000, elf::R_PPC64_TOC16_LO_DS, Target::Handle, 0); // std 3, 0(4)
    a.rel(BL, elf::R_PPC64_REL24, Target::Globals, 0);
    atexit(a, unreg);
    a.w(0x3821_0020); // addi 1, 1, 32
    a.w(LD_LR);
    a.ret();
    a.end()
}

/// `atexit(unreg)`: the handler's address, TOC-relative against the code
/// section.
fn atexit(a: &mut Asm, unreg: Label) {
    for (word, r_type) in [
        (ADDIS_R3, elf::R_PPC64_TOC16_HA),
        (ADDI_R3, elf::R_PPC64_TOC16_LO),
    ] {
        a.reloc_to(r_type, unreg);
        a.w(word);
    }
    a.call(Target::Runtime("atexit"));
}

/// The `atexit` handler: load the handle, unregister.
fn unregister(a: &mut Asm, name: &'static str) -> Span {
    a.begin(0);
    a.toc();
    a.ws(&[MFLR, 0xf821_ffe1, 0xf801_0030]); // mflr 0; stdu 1, -32(1); std 0, 48(1)
    a.prologue(32, &[]);
    a.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, Target::Handle, 0);
    a.rel(0xe863_0000, elf::R_PPC64_TOC16_LO_DS, Target::Handle, 0); // ld 3, 0(3)
    a.call(Target::Runtime(name));
    a.w(0x3821_0020); // addi 1, 1, 32
    a.w(LD_LR);
    a.ret();
    a.end()
}

/// The entry loop's prologue: a 192-byte frame saving r26–r30 and v31,
/// the handle in r30, the bounds, the early exit to `done`; then the entry
/// count (`(stop - start) / 56`, by multiplying with the inverse of 7) in
/// r28, r27 one entry before the first, the constants the kernel call
/// needs (r29 = 0xffffffff, v31 = 0), and a jump to `check`.
fn loop_prologue(a: &mut Asm, done: Label, check: Label) {
    a.toc();
    a.ws(&[MFLR, 0xf821_ff41, 0xf801_00d0]); // mflr 0; stdu 1, -192(1); std 0, 208(1)
    a.prologue(
        192,
        &[
            (Reg::R26, -48),
            (Reg::R27, -40),
            (Reg::R28, -32),
            (Reg::R29, -24),
            (Reg::R30, -16),
            (Reg::VR31, -64),
        ],
    );
    a.ws(&[
        0xfbc1_00b0, // std 30, 176(1)
        0x3880_0080, // li 4, 128
        0x7c7e_1b78, // mr 30, 3
    ]);
    a.rel(ADDIS_R3, elf::R_PPC64_TOC16_HA, Target::EntriesStop, 0);
    a.ws(&[
        0xfb41_0090, // std 26, 144(1)
        0xfb61_0098, // std 27, 152(1)
        0xfb81_00a0, // std 28, 160(1)
        0xfba1_00a8, // std 29, 168(1)
        0x7fe1_21ce, // stvx 31, 1, 4
    ]);
    a.rel(0x3883_0000, elf::R_PPC64_TOC16_LO, Target::EntriesStop, 0); // addi 4, 3, 0
    a.address(Target::EntriesStart, 0);
    a.w(0x7c23_2040); // cmpld 3, 4
    a.branch(BEQ, done, Branch::B);
    a.ws(&[
        0x3ca0_0db6, // lis 5, 0xdb6
        0x7c83_2050, // sub 4, 4, 3
        0x3b63_ffd8, // addi 27, 3, -40
        0x3860_ffff, // li 3, -1
        0xf3ff_fcd7, // xxlxor 63, 63, 63
        0x3b41_0060, // addi 26, 1, 96
        0x60a5_db6d, // ori 5, 5, 0xdb6d
        0x787d_0028, // rldic 29, 3, 0, 32
        0x78a5_010a, // rldic 5, 5, 32, 4
        0x64a5_b6db, // oris 5, 5, 0xb6db
        0x60a5_6db7, // ori 5, 5, 0x6db7
        0x7c84_29d2, // mulld 4, 4, 5
        0x3884_fff8, // addi 4, 4, -8
        0x7884_e8c2, // rldicl 4, 4, 61, 3
        0x3b84_0001, // addi 28, 4, 1
    ]);
    a.branch(B, check, Branch::I);
}

/// A kernel: `PRegisterFunction(h, addr, name, name, -1, 0 × 5)`, the last
/// two zeros stored on the stack from v31; then `nop`s up to the loop's
/// 16-byte-aligned head.
fn register_function(a: &mut Asm, name: &'static str) {
    a.ws(&[
        MR_R3_R30,
        0x7ca4_2b78, // mr 4, 5 (address)
        0x3900_0000, // li 8, 0
        0x3920_0000, // li 9, 0
        0x7cc5_3378, // mr 5, 6 (name)
        0x3940_0000, // li 10, 0
        0x7fa7_eb78, // mr 7, 29 (-1)
        0x7fe0_d799, // stxvd2x 63, 0, 26
    ]);
    a.call(Target::Runtime(name));
    a.align16();
}

/// The loop's head at `next`: one entry fewer, the exit to `done` after
/// the last; then at `check` the next entry (r27 += 56, address in r5),
/// the kind check against `kind` (`cmplwi 3, kind` word), name in r6, size
/// in r10, and a kernel (size 0) to `func`.
fn loop_step(a: &mut Asm, [next, check, done, func]: [Label; 4], cmp_kind: u32) {
    a.bind(next);
    a.w(0x3b9c_ffff); // addi 28, 28, -1
    a.w(0x283c_0000); // cmpldi 28, 0
    a.branch(BLE, done, Branch::B);
    a.bind(check);
    a.w(0xe8bb_0039); // ldu 5, 56(27) (address)
    a.w(0xa07b_fffa); // lhz 3, -6(27) (kind)
    a.w(cmp_kind);
    a.branch(BNE, next, Branch::B);
    a.w(0xe95b_0010); // ld 10, 16(27) (size)
    a.w(0xe8db_0008); // ld 6, 8(27) (name)
    a.w(0x282a_0000); // cmpldi 10, 0
    a.branch(BEQ, func, Branch::B);
    a.w(0x807b_fffc); // lwz 3, -4(27) (flags)
}

/// Restores the registers and returns.
fn loop_epilogue(a: &mut Asm, done: Label) {
    a.bind(done);
    a.ws(&[
        0x3860_0080, // li 3, 128
        0xebc1_00b0, // ld 30, 176(1)
        0xeba1_00a8, // ld 29, 168(1)
        0x7fe1_18ce, // lvx 31, 1, 3
        0xeb81_00a0, // ld 28, 160(1)
        0xeb61_0098, // ld 27, 152(1)
        0xeb41_0090, // ld 26, 144(1)
        0x3821_00c0, // addi 1, 1, 192
        LD_LR,
    ]);
    a.ret();
}

/// The CUDA entry loop (`.cuda.globals_reg`).
fn cuda_globals(a: &mut Asm) -> Span {
    let [func, next, check, managed, done] = [(); 5].map(|()| a.label());
    a.begin(0);
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__cudaRegisterFunction");
    loop_step(a, [next, check, done, func], 0x2803_0002); // cmplwi 3, 2 (CUDA)
    a.w(0x5464_077e); // clrlwi 4, 3, 29 (type)
    a.w(0x2804_0001); // cmplwi 4, 1
    a.branch(BEQ, managed, Branch::B);
    a.w(0x2804_0000); // cmplwi 4, 0
    a.branch(BNE, next, Branch::B);
    // A variable: __cudaRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.ws(&[
        0x5467_effe, // rlwinm 7, 3, 29, 31, 31 (extern)
        0x5469_e7fe, // rlwinm 9, 3, 28, 31, 31 (constant)
        MR_R3_R30,
        0x7ca4_2b78, // mr 4, 5
        0x7cc5_3378, // mr 5, 6
        0x7d48_5378, // mr 8, 10
        0x3940_0000, // li 10, 0
    ]);
    a.call(Target::Runtime("__cudaRegisterVar"));
    a.branch(B, next, Branch::I);
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.ws(&[
        0xe89b_0020, // ld 4, 32(27) (aux address)
        0x811b_0018, // lwz 8, 24(27) (data)
        MR_R3_R30,
        0x7d47_5378, // mr 7, 10
    ]);
    a.call(Target::Runtime("__cudaRegisterManagedVar"));
    a.branch(B, next, Branch::I);
    loop_epilogue(a, done);
    a.end()
}

/// The HIP entry loop (`.hip.globals_reg`): a tree of compares on the
/// entry type, no jump table.
fn hip_globals(a: &mut Asm) -> Span {
    let [func, next, check, at_least2, global, surface, done] = [(); 7].map(|()| a.label());
    a.begin(0);
    loop_prologue(a, done, check);
    a.bind(func);
    register_function(a, "__hipRegisterFunction");
    loop_step(a, [next, check, done, func], 0x2803_0004); // cmplwi 3, 4 (HIP)
    a.ws(&[
        0x813b_0018, // lwz 9, 24(27) (data)
        0x5464_077e, // clrlwi 4, 3, 29 (type)
        0x546b_effe, // rlwinm 11, 3, 29, 31, 31 (extern)
        0x2c04_0002, // cmpwi 4, 2
    ]);
    a.branch(BGE, at_least2, Branch::B);
    a.w(0x2804_0000); // cmplwi 4, 0
    a.branch(BEQ, global, Branch::B);
    a.w(0x2804_0001); // cmplwi 4, 1
    a.branch(BNE, next, Branch::B);
    // A managed variable: __hipRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.ws(&[
        0xe89b_0020, // ld 4, 32(27) (aux address)
        MR_R3_R30,
        0x7d47_5378, // mr 7, 10
        0x7d28_4b78, // mr 8, 9
    ]);
    a.call(Target::Runtime("__hipRegisterManagedVar"));
    a.branch(B, next, Branch::I);
    a.bind(at_least2);
    a.branch(BEQ, surface, Branch::B); // type 2 (cr0 of cmpwi 4, 2)
    a.w(0x2804_0003); // cmplwi 4, 3
    a.branch(BNE, next, Branch::B);
    // A texture: __hipRegisterTexture(h, addr, name, name, (u32) data,
    // normalized, extern).
    a.ws(&[
        0x5468_dffe, // rlwinm 8, 3, 27, 31, 31 (normalized)
        MR_R3_R30,
        0x7ca4_2b78, // mr 4, 5
        0x7cc5_3378, // mr 5, 6
        0x7d27_4b78, // mr 7, 9
        0x7d69_5b78, // mr 9, 11
    ]);
    a.call(Target::Runtime("__hipRegisterTexture"));
    a.branch(B, next, Branch::I);
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.ws(&[
        0x5469_e7fe, // rlwinm 9, 3, 28, 31, 31 (constant)
        MR_R3_R30,
        0x7ca4_2b78, // mr 4, 5
        0x7cc5_3378, // mr 5, 6
        0x7d67_5b78, // mr 7, 11
        0x7d48_5378, // mr 8, 10
        0x3940_0000, // li 10, 0
    ]);
    a.call(Target::Runtime("__hipRegisterVar"));
    a.branch(B, next, Branch::I);
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    a.ws(&[
        MR_R3_R30,
        0x7ca4_2b78, // mr 4, 5
        0x7cc5_3378, // mr 5, 6
        0x7d27_4b78, // mr 7, 9
        0x7d68_5b78, // mr 8, 11
    ]);
    a.call(Target::Runtime("__hipRegisterSurface"));
    a.branch(B, next, Branch::I);
    loop_epilogue(a, done);
    a.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    /// llc 22's OpenMP constructor for one image (llvm-objdump of its
    /// object): the TOC prologue, the descriptor at offset 0x20 of the
    /// merged `.data.rel.ro`, the handler at 0x60, a `nop` after each
    /// external call, 12 bytes of zeros at the end.
    #[test]
    fn constructor_words_and_relocations() {
        let [reg, atexit, data, text] = [0, 1, 2, 3].map(SymbolId::nth);
        let calls = super::super::register_calls((reg, atexit), (data, 0x20), (text, 0x60));
        let f = Ppc64.function(0, &calls).unwrap();
        let words: Vec<u32> = f
            .code
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            words,
            [
                0x3c4c_0000,
                0x3842_0000,
                0x7c08_02a6,
                0xf821_ffe1,
                0xf801_0030,
                0x3c62_0000,
                0x3863_0000,
                0x3863_0020,
                0x4800_0001,
                0x6000_0000,
                0x3c62_0000,
                0x3863_0000,
                0x4800_0001,
                0x6000_0000,
                0x3821_0020,
                0xe801_0010,
                0x7c08_03a6,
                0x4e80_0020,
                0,
                0,
                0,
            ]
        );
        let relocs: Vec<_> = f
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.target, r.addend))
            .collect();
        let toc = Target::Runtime(".TOC.");
        let [data, text, reg, atexit] = [data, text, reg, atexit].map(Target::Symbol);
        assert_eq!(
            relocs,
            [
                (0x00, elf::R_PPC64_REL16_HA, toc, 0),
                (0x04, elf::R_PPC64_REL16_LO, toc, 4),
                (0x14, elf::R_PPC64_TOC16_HA, data, 0),
                (0x18, elf::R_PPC64_TOC16_LO, data, 0),
                (0x20, elf::R_PPC64_REL24, reg, 0),
                (0x28, elf::R_PPC64_TOC16_HA, text, 0x60),
                (0x2c, elf::R_PPC64_TOC16_LO, text, 0x60),
                (0x30, elf::R_PPC64_REL24, atexit, 0),
            ]
        );
        assert_eq!(Ppc64.padding(8), [0, 0, 0, 0x60, 0, 0, 0, 0x60]);
    }
}
