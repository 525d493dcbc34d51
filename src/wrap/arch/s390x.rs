//! IBM Z (s390x, 64-bit, big-endian), as LLVM 22's `llc
//! -relocation-model=pic` encodes the wrapper's functions:
//!
//! ```text
//! stmg  %r14, %r15, 112(%r15)   ; save the return address and stack pointer
//! aghi  %r15, -160              ; the ABI's 160-byte register save area
//! larl  %r2, arg                ; R_390_PC32DBL arg+2 (or in-section, none)
//! brasl %r14, callee            ; R_390_PLT32DBL callee+2
//! …                             ; one larl/brasl pair per call
//! lmg   %r14, %r15, 272(%r15)
//! br    %r14
//! ```
//!
//! Instructions are 2, 4 or 6 bytes, big-endian; PC-relative fields count
//! halfwords from the instruction's start and sit 2 bytes into it (hence
//! the addend 2 of their relocations). Functions are 16-aligned, padded
//! with `nopr %r7`.

use gimli::Register;
use object::elf;

use super::asm::{self, Label};
use super::code::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, addend, internal};
use crate::error::Result;

/// The s390x encoder.
#[derive(Debug)]
pub(crate) struct S390x;

/// General register `n` as a DWARF register.
const fn r(n: u16) -> Register {
    Register(n)
}

/// `stmg %r14, %r15, 112(%r15)`
const SAVE: [u8; 6] = [0xeb, 0xef, 0xf0, 0x70, 0x00, 0x24];
/// `lmg %r14, %r15, 272(%r15)`
const RESTORE: [u8; 6] = [0xeb, 0xef, 0xf1, 0x10, 0x00, 0x04];
/// `br %r14`
const RET: [u8; 2] = [0x07, 0xfe];
/// `nopr %r7`
const NOP: [u8; 2] = [0x07, 0x07];
/// `larl %r2, 0`
const LARL_R2: [u8; 2] = [0xc0, 0x20];
/// `brasl %r14, 0`
const BRASL: [u8; 2] = [0xc0, 0xe5];
/// `j 0` (`brc 15`)
const J: [u8; 2] = [0xa7, 0xf4];
/// `lgr %r2, %r13`
const LGR_R2_R13: [u8; 4] = [0xb9, 0x04, 0x00, 0x2d];
/// `lgr %r3, %r4; lgr %r4, %r5`: an entry's address and name as the
/// second and third arguments.
const ADDRESS_NAME: [u8; 8] = [0xb9, 0x04, 0x00, 0x34, 0xb9, 0x04, 0x00, 0x45];

impl Cpu for S390x {
    fn function(&self, at: u64, calls: &[Call]) -> Result<Function> {
        let mut a = Asm::default();
        a.begin(160);
        prologue(&mut a, &SAVE, &[(r(14), -48), (r(15), -40)], 160);
        for call in calls {
            match call.arg {
                Arg::Data {
                    section, offset, ..
                } => a.rel(&LARL_R2, Target::Symbol(section), addend(offset)?),
                Arg::Code { offset, .. } => {
                    // In the same section: resolved here, no relocation.
                    let here = at + a.here();
                    let delta = (i64::try_from(offset).map_err(|_| internal("offset"))?
                        - i64::try_from(here).map_err(|_| internal("offset"))?)
                        / 2;
                    let field = i32::try_from(delta).map_err(|_| internal("larl out of range"))?;
                    a.bytes(&LARL_R2);
                    a.bytes(&field.to_be_bytes());
                }
            }
            a.call(Target::Symbol(call.callee));
        }
        a.bytes(&RESTORE);
        a.bytes(&RET);
        a.function()
    }

    fn padding(&self, len: usize) -> Vec<u8> {
        NOP.iter().copied().cycle().take(len).collect()
    }

    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode> {
        let mut a = Asm::default();
        let (globals, unreg) = (a.label(), a.label());
        let (reg, unregister_name) = match which {
            Fatbin::Cuda => (cuda_constructor(&mut a, unreg), "__cudaUnregisterFatBinary"),
            Fatbin::Hip => (hip_constructor(&mut a, unreg), "__hipUnregisterFatBinary"),
        };
        a.align16();
        a.bind(unreg);
        let unreg_span = unregister(&mut a, unregister_name);
        a.align16();
        a.bind(globals);
        let (globals_span, cases) = match which {
            Fatbin::Cuda => (cuda_globals(&mut a), Vec::new()),
            Fatbin::Hip => hip_globals(&mut a),
        };
        a.finish([reg, unreg_span, globals_span], &cases)
    }
}

// ---------------------------------------------------------------------------
// The assembler: the shared core plus this CPU's fixups and instructions
// ---------------------------------------------------------------------------

/// How a PC-relative field (2 bytes into the instruction) counts
/// halfwords to a label.
#[derive(Debug, Clone, Copy)]
enum Rel {
    /// 16 bits (`brc`, `cgrj`, `cij`).
    Rel16,
    /// 32 bits (`larl`, `brcl`).
    Rel32,
}

impl asm::Fixup for Rel {
    fn apply(self, code: &mut [u8], at: usize, target: usize) -> Result<()> {
        let broken = internal;
        let delta = (i64::try_from(target).map_err(|_| broken("offset"))?
            - i64::try_from(at).map_err(|_| broken("offset"))?)
            / 2;
        let (field, len): ([u8; 4], usize) = match self {
            Rel::Rel16 => {
                let v = i16::try_from(delta).map_err(|_| broken("a branch is out of range"))?;
                let b = v.to_be_bytes();
                ([b[0], b[1], 0, 0], 2)
            }
            Rel::Rel32 => {
                let v = i32::try_from(delta).map_err(|_| broken("a branch is out of range"))?;
                (v.to_be_bytes(), 4)
            }
        };
        code.get_mut(at + 2..at + 2 + len)
            .ok_or_else(|| broken("a branch past the end"))?
            .copy_from_slice(&field[..len]);
        Ok(())
    }
}

/// The shared assembler core with s390x's PC-relative fields.
type Asm = asm::Asm<Rel>;

/// s390x instructions on top of the core.
trait ZAsm {
    /// An instruction of 2 bytes of opcode and registers, then a 32-bit
    /// PC-relative field relocated (`R_390_PC32DBL`) against `target`.
    fn rel(&mut self, head: &[u8; 2], target: Target, addend: i64);
    /// `brasl %r14, target` (`R_390_PLT32DBL`).
    fn call(&mut self, target: Target);
    /// An instruction whose field 2 bytes in refers to `l`: `head` (its
    /// first 2 bytes), the field, then `tail`.
    fn to(&mut self, head: [u8; 2], l: Label, how: Rel, tail: &[u8]);
    /// `nopr %r7` up to the next multiple of 16 (where functions start).
    fn align16(&mut self);
}

impl ZAsm for Asm {
    fn rel(&mut self, head: &[u8; 2], target: Target, addend: i64) {
        self.bytes(head);
        self.reloc(elf::R_390_PC32DBL, target, addend + 2);
        self.bytes(&[0; 4]);
    }

    fn call(&mut self, target: Target) {
        self.bytes(&BRASL);
        self.reloc(elf::R_390_PLT32DBL, target, 2);
        self.bytes(&[0; 4]);
    }

    fn to(&mut self, head: [u8; 2], l: Label, how: Rel, tail: &[u8]) {
        self.fixup(how, l);
        self.bytes(&head);
        let len = match how {
            Rel::Rel16 => 2,
            Rel::Rel32 => 4,
        };
        self.bytes(&[0; 4][..len]);
        self.bytes(tail);
    }

    fn align16(&mut self) {
        while !self.here().is_multiple_of(16) {
            self.bytes(&NOP);
        }
    }
}

/// The prologue: `save` (a `stmg`), after which `saved` registers are at
/// these CFA offsets, then the frame of `frame` bytes (an `aghi`).
fn prologue(a: &mut Asm, save: &[u8], saved: &[(Register, i32)], frame: i32) {
    a.bytes(save);
    a.saved(saved);
    let imm = i16::try_from(-frame).unwrap_or(i16::MIN).to_be_bytes();
    a.bytes(&[0xa7, 0xfb, imm[0], imm[1]]);
    a.moved(frame);
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (docs/formats/wrapper-objects.md)
// ---------------------------------------------------------------------------

/// The CUDA constructor (`.cuda.fatbin_reg`): the handle kept in r13.
fn cuda_constructor(a: &mut Asm, unreg: Label) -> Span {
    a.begin(160);
    let save = [0xeb, 0xdf, 0xf0, 0x68, 0x00, 0x24]; // stmg %r13, %r15, 104(%r15)
    prologue(a, &save, &[(r(13), -56), (r(14), -48), (r(15), -40)], 160);
    a.rel(&LARL_R2, Target::Wrapper, 0);
    a.call(Target::Runtime("__cudaRegisterFatBinary"));
    a.bytes(&[0xb9, 0x04, 0x00, 0xd2]); // lgr %r13, %r2
    a.rel(&[0xc4, 0x2b], Target::Handle, 0); // stgrl %r2, handle
    a.call(Target::Globals);
    a.bytes(&LGR_R2_R13);
    a.call(Target::Runtime("__cudaRegisterFatBinaryEnd"));
    a.to(LARL_R2, unreg, Rel::Rel32, &[]);
    a.call(Target::Runtime("atexit"));
    a.bytes(&[0xeb, 0xdf, 0xf1, 0x08, 0x00, 0x04]); // lmg %r13, %r15, 264(%r15)
    a.bytes(&RET);
    a.end()
}

/// The HIP constructor (`.hip.fatbin_reg`).
fn hip_constructor(a: &mut Asm, unreg: Label) -> Span {
    a.begin(160);
    prologue(a, &SAVE, &[(r(14), -48), (r(15), -40)], 160);
    a.rel(&LARL_R2, Target::Wrapper, 0);
    a.call(Target::Runtime("__hipRegisterFatBinary"));
    a.rel(&[0xc4, 0x2b], Target::Handle, 0); // stgrl %r2, handle
    a.call(Target::Globals);
    a.to(LARL_R2, unreg, Rel::Rel32, &[]);
    a.call(Target::Runtime("atexit"));
    a.bytes(&RESTORE);
    a.bytes(&RET);
    a.end()
}

/// The `atexit` handler: load the handle, unregister.
fn unregister(a: &mut Asm, name: &'static str) -> Span {
    a.begin(160);
    prologue(a, &SAVE, &[(r(14), -48), (r(15), -40)], 160);
    a.rel(&[0xc4, 0x28], Target::Handle, 0); // lgrl %r2, handle
    a.call(Target::Runtime(name));
    a.bytes(&RESTORE);
    a.bytes(&RET);
    a.end()
}

/// The entry loop up to an entry's flags: a 200-byte frame saving r6–r15,
/// the bounds (r12 = stop, r11 = start), the early exit to `done`, the
/// handle in r13; a kernel at `func` (`PRegisterFunction(h, addr, name,
/// name, -1, 0 × 5)`, the five zeros on the stack); the step to the next
/// entry at `next`; at `check` the kind check against `kind`, the size in
/// r6 (a kernel when zero), the address in r4, the name in r5.
fn loop_head(a: &mut Asm, [func, next, check, done]: [Label; 4], kind: u8, register: &'static str) {
    let save = [0xeb, 0x6f, 0xf0, 0x30, 0x00, 0x24]; // stmg %r6, %r15, 48(%r15)
    prologue(
        a,
        &save,
        &[
            (r(6), -112),
            (r(11), -72),
            (r(12), -64),
            (r(13), -56),
            (r(14), -48),
            (r(15), -40),
        ],
        200,
    );
    a.rel(&[0xc0, 0xc0], Target::EntriesStop, 0); // larl %r12, stop
    a.rel(&[0xc0, 0xb0], Target::EntriesStart, 0); // larl %r11, start
    a.to([0xec, 0xbc], done, Rel::Rel16, &[0x80, 0x64]); // cgrje %r11, %r12, done
    a.bytes(&[0xb9, 0x04, 0x00, 0xd2]); // lgr %r13, %r2
    a.to(J, check, Rel::Rel16, &[]);
    a.bind(func);
    a.bytes(&[
        0xe5, 0x48, 0xf0, 0xc0, 0x00, 0x00, // mvghi 192(%r15), 0
        0xe5, 0x48, 0xf0, 0xb8, 0x00, 0x00, // mvghi 184(%r15), 0
        0xe5, 0x48, 0xf0, 0xb0, 0x00, 0x00, // mvghi 176(%r15), 0
        0xe5, 0x48, 0xf0, 0xa8, 0x00, 0x00, // mvghi 168(%r15), 0
        0xa7, 0x68, 0xff, 0xff, // lhi %r6, -1
        0xe5, 0x48, 0xf0, 0xa0, 0x00, 0x00, // mvghi 160(%r15), 0
    ]);
    a.bytes(&LGR_R2_R13);
    a.bytes(&ADDRESS_NAME);
    a.call(Target::Runtime(register));
    a.bind(next);
    a.bytes(&[0x41, 0xb0, 0xb0, 0x38]); // la %r11, 56(%r11)
    a.to([0xec, 0xbc], done, Rel::Rel16, &[0x80, 0x64]); // cgrje %r11, %r12, done
    a.bind(check);
    a.bytes(&[0xe5, 0x55, 0xb0, 0x0a, 0x00, kind]); // clhhsi 10(%r11), kind
    a.to([0xa7, 0x64], next, Rel::Rel16, &[]); // jlh next
    a.bytes(&[
        0xe3, 0x60, 0xb0, 0x20, 0x00, 0x02, // ltg %r6, 32(%r11) (size)
        0xe3, 0x40, 0xb0, 0x10, 0x00, 0x04, // lg %r4, 16(%r11) (address)
        0xe3, 0x50, 0xb0, 0x18, 0x00, 0x04, // lg %r5, 24(%r11) (name)
    ]);
    a.to([0xa7, 0x84], func, Rel::Rel16, &[]); // je func
}

/// Restores the registers and returns.
fn loop_end(a: &mut Asm, done: Label) {
    a.bind(done);
    a.bytes(&[0xeb, 0x6f, 0xf0, 0xf8, 0x00, 0x04]); // lmg %r6, %r15, 248(%r15)
    a.bytes(&RET);
}

/// The CUDA entry loop (`.cuda.globals_reg`).
fn cuda_globals(a: &mut Asm) -> Span {
    let [func, next, check, managed, done] = [(); 5].map(|()| a.label());
    a.begin(160);
    loop_head(a, [func, next, check, done], 2, "__cudaRegisterFunction");
    a.bytes(&[
        0x58, 0x10, 0xb0, 0x0c, // l %r1, 12(%r11) (flags)
        0x18, 0x01, // lr %r0, %r1
        0xc0, 0x0b, 0x00, 0x00, 0x00, 0x07, // nilf %r0, 7 (type)
    ]);
    a.to([0xec, 0x08], managed, Rel::Rel16, &[0x01, 0x7e]); // cije %r0, 1, managed
    a.to([0xec, 0x06], next, Rel::Rel16, &[0x00, 0x7e]); // cijlh %r0, 0, next
    // A variable: __cudaRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bytes(&[
        0xec, 0x01, 0x3f, 0xbf, 0x3d, 0x55, // risbgz %r0, %r1, 63, 63, 61 (extern)
        0xec, 0x11, 0x3f, 0xbf, 0x3c, 0x55, // risbgz %r1, %r1, 63, 63, 60 (constant)
        0x50, 0x10, 0xf0, 0xac, // st %r1, 172(%r15)
        0xe3, 0x60, 0xf0, 0xa0, 0x00, 0x24, // stg %r6, 160(%r15)
        0xe5, 0x4c, 0xf0, 0xb4, 0x00, 0x00, // mvhi 180(%r15), 0
    ]);
    a.bytes(&LGR_R2_R13);
    a.bytes(&ADDRESS_NAME);
    a.bytes(&[0x18, 0x60]); // lr %r6, %r0
    a.call(Target::Runtime("__cudaRegisterVar"));
    a.to(J, next, Rel::Rel16, &[]);
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.bytes(&[
        0xe3, 0x30, 0xb0, 0x30, 0x00, 0x04, // lg %r3, 48(%r11) (aux address)
        0x58, 0x00, 0xb0, 0x2c, // l %r0, 44(%r11) (data)
        0x50, 0x00, 0xf0, 0xa4, // st %r0, 164(%r15)
    ]);
    a.bytes(&LGR_R2_R13);
    a.call(Target::Runtime("__cudaRegisterManagedVar"));
    a.to(J, next, Rel::Rel16, &[]);
    loop_end(a, done);
    a.end()
}

/// The HIP entry loop (`.hip.globals_reg`): a jump table on the entry
/// type (types 0–3; above, the next entry). Returns its span and the
/// table's cases.
fn hip_globals(a: &mut Asm) -> (Span, Vec<Label>) {
    let [func, next, check, global, managed, surface, texture, done] = [(); 8].map(|()| a.label());
    a.begin(160);
    loop_head(a, [func, next, check, done], 4, "__hipRegisterFunction");
    a.bytes(&[
        0x58, 0x20, 0xb0, 0x0c, // l %r2, 12(%r11) (flags)
        0x18, 0x02, // lr %r0, %r2
        0xc0, 0x0b, 0x00, 0x00, 0x00, 0x07, // nilf %r0, 7 (type)
    ]);
    a.to([0xec, 0x02], next, Rel::Rel16, &[0x03, 0x7e]); // cijh %r0, 3, next
    a.bytes(&[
        0xb9, 0x16, 0x00, 0x00, // llgfr %r0, %r0
        0xeb, 0x10, 0x00, 0x02, 0x00, 0x0d, // sllg %r1, %r0, 2
    ]);
    a.rel(&[0xc0, 0x30], Target::JumpTable, 0); // larl %r3, table
    a.bytes(&[
        0xe3, 0x31, 0x30, 0x00, 0x00, 0x18, // agf %r3, 0(%r1, %r3)
        0x58, 0x00, 0xb0, 0x2c, // l %r0, 44(%r11) (data)
        0xec, 0x12, 0x3f, 0xbf, 0x3d, 0x55, // risbgz %r1, %r2, 63, 63, 61 (extern)
        0x07, 0xf3, // br %r3
    ]);
    let call = |a: &mut Asm, name: &'static str| {
        a.bytes(&LGR_R2_R13);
        a.bytes(&ADDRESS_NAME);
        a.bytes(&[0x18, 0x60]); // lr %r6, %r0
        a.call(Target::Runtime(name));
        a.to(J, next, Rel::Rel16, &[]);
    };
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.bytes(&[
        0xec, 0x02, 0x3f, 0xbf, 0x3c, 0x55, // risbgz %r0, %r2, 63, 63, 60 (constant)
        0x50, 0x00, 0xf0, 0xac, // st %r0, 172(%r15)
        0xe3, 0x60, 0xf0, 0xa0, 0x00, 0x24, // stg %r6, 160(%r15)
        0xe5, 0x4c, 0xf0, 0xb4, 0x00, 0x00, // mvhi 180(%r15), 0
    ]);
    a.bytes(&LGR_R2_R13);
    a.bytes(&ADDRESS_NAME);
    a.bytes(&[0x18, 0x61]); // lr %r6, %r1
    a.call(Target::Runtime("__hipRegisterVar"));
    a.to(J, next, Rel::Rel16, &[]);
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    a.bytes(&[0x50, 0x10, 0xf0, 0xa4]); // st %r1, 164(%r15)
    call(a, "__hipRegisterSurface");
    // A texture: __hipRegisterTexture(h, addr, name, name, (u32) data,
    // normalized, extern).
    a.bind(texture);
    a.bytes(&[
        0xec, 0x22, 0x3f, 0xbf, 0x3b, 0x55, // risbgz %r2, %r2, 63, 63, 59 (normalized)
        0x50, 0x10, 0xf0, 0xac, // st %r1, 172(%r15)
        0x50, 0x20, 0xf0, 0xa4, // st %r2, 164(%r15)
    ]);
    call(a, "__hipRegisterTexture");
    // A managed variable: __hipRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.bytes(&[
        0xe3, 0x30, 0xb0, 0x30, 0x00, 0x04, // lg %r3, 48(%r11) (aux address)
        0x50, 0x00, 0xf0, 0xa4, // st %r0, 164(%r15)
    ]);
    a.bytes(&LGR_R2_R13);
    a.call(Target::Runtime("__hipRegisterManagedVar"));
    a.to(J, next, Rel::Rel16, &[]);
    loop_end(a, done);
    (a.end(), vec![global, managed, surface, texture])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    /// llc 22's OpenMP constructor for one image (llvm-objdump of its
    /// object): the descriptor at `.data.rel.ro + 0x20` relocated, the
    /// handler at 0x30 of the same section resolved in place.
    #[test]
    fn constructor_bytes_and_relocations() {
        let [reg, atexit, data, text] = [0, 1, 2, 3].map(SymbolId::nth);
        let calls = super::super::register_calls((reg, atexit), (data, 0x20), (text, 0x30));
        let f = S390x.function(0, &calls).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0xeb, 0xef, 0xf0, 0x70, 0x00, 0x24, // stmg %r14, %r15, 112(%r15)
            0xa7, 0xfb, 0xff, 0x60,             // aghi %r15, -160
            0xc0, 0x20, 0, 0, 0, 0,             // larl %r2, desc
            0xc0, 0xe5, 0, 0, 0, 0,             // brasl %r14, __tgt_register_lib
            0xc0, 0x20, 0, 0, 0, 0x0d,          // larl %r2, unreg (0x16 + 2 × 13)
            0xc0, 0xe5, 0, 0, 0, 0,             // brasl %r14, atexit
            0xeb, 0xef, 0xf1, 0x10, 0x00, 0x04, // lmg %r14, %r15, 272(%r15)
            0x07, 0xfe,                         // br %r14
        ];
        assert_eq!(f.code, want);
        let relocs: Vec<_> = f
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.target, r.addend))
            .collect();
        let [data, reg, atexit] = [data, reg, atexit].map(Target::Symbol);
        assert_eq!(
            relocs,
            [
                (0x0c, elf::R_390_PC32DBL, data, 0x22),
                (0x12, elf::R_390_PLT32DBL, reg, 2),
                (0x1e, elf::R_390_PLT32DBL, atexit, 2),
            ]
        );
        assert_eq!(S390x.padding(6), [0x07; 6]);
    }
}
