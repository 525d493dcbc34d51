//! RISC-V 64 (LP64D, little-endian, with the C extension), as LLVM 22's
//! `llc -relocation-model=pic -mattr=+m,+a,+f,+d,+c -target-abi=lp64d`
//! encodes the wrapper's functions (the ABI of Debian's and clang's
//! objects):
//!
//! ```text
//! c.addi sp, -16                ; 2-byte (RVC) forms where they exist
//! c.sdsp ra, 8(sp)
//! .Lpcrel_hiN:
//! auipc  a0, 0                  ; R_RISCV_PCREL_HI20 arg
//! addi   a0, a0, 0              ; R_RISCV_PCREL_LO12_I .Lpcrel_hiN
//! auipc  ra, 0                  ; R_RISCV_CALL_PLT callee
//! jalr   ra                     ;   (call: one relocation for the pair)
//! …                             ; per call; an address in the same
//!                               ; section is resolved, no relocation
//! c.ldsp ra, 8(sp)
//! c.addi sp, 16
//! c.ret
//! ```
//!
//! llc relocates against the symbols themselves, never section symbols
//! (the linker may relax code, so an offset in a section is not fixed);
//! the low half of a PC-relative address refers to the label of its
//! `auipc`. Without `+relax` there are no `R_RISCV_RELAX` companions.
//! Unlike the other CPUs, llc describes the epilogue in `.eh_frame` too.
//!
//! The CUDA and HIP registration code is llc's, step by step ([`Op`]).

use gimli::RiscV as Reg;
use object::elf;

use super::asm;
use super::code::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, internal};
use crate::error::Result;

/// The riscv64 encoder.
#[derive(Debug)]
pub(crate) struct Riscv64;

/// `c.addi sp, -16`
const ALLOC_FRAME: u16 = 0x1141;
/// `c.sdsp ra, 8(sp)`
const SAVE_RA: u16 = 0xe406;
/// `c.ldsp ra, 8(sp)`
const RESTORE_RA: u16 = 0x60a2;
/// `c.addi sp, 16`
const FREE_FRAME: u16 = 0x0141;
/// `c.ret` (`c.jr ra`)
const RET: u16 = 0x8082;
/// `c.nop`
const NOP: u16 = 0x0001;
/// `auipc a0, 0`
const AUIPC_A0: u32 = 0x0000_0517;
/// `addi a0, a0, 0`
const ADDI_A0: u32 = 0x0005_0513;
/// `auipc ra, 0`
const AUIPC_RA: u32 = 0x0000_0097;
/// `jalr ra, 0(ra)`
const JALR_RA: u32 = 0x0000_80e7;

/// The ISA string of the objects' `Tag_RISCV_arch`: what llc records for
/// `-mattr=+m,+a,+f,+d,+c` (the extensions and those they imply).
const ARCH: &str =
    "rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zmmul1p0_zaamo1p0_zalrsc1p0_zca1p0_zcd1p0";

/// `Tag_RISCV_stack_align`: the psABI's 16 bytes.
const STACK_ALIGN: u8 = 16;

impl Cpu for Riscv64 {
    fn function(&self, at: u64, calls: &[Call]) -> Result<Function> {
        let mut a = Asm::default();
        a.begin(0);
        a.h(ALLOC_FRAME);
        a.moved(16);
        a.h(SAVE_RA);
        a.saved(&[(Reg::RA, -8)]);
        for (n, call) in (0..).zip(calls) {
            match call.arg {
                Arg::Data { symbol, .. } => {
                    let label = a.in_function();
                    a.reloc(elf::R_RISCV_PCREL_HI20, Target::Symbol(symbol), 0);
                    a.w(AUIPC_A0);
                    a.reloc(elf::R_RISCV_PCREL_LO12_I, Target::Label(label, n), 0);
                    a.w(ADDI_A0);
                }
                Arg::Code { offset, .. } => {
                    // In the same section: resolved here, no relocation.
                    let delta = i64::try_from(offset).map_err(|_| internal("offset"))?
                        - i64::try_from(at + a.here()).map_err(|_| internal("offset"))?;
                    let (hi, lo) = split(delta)?;
                    a.w(AUIPC_A0 | hi << 12);
                    a.w(ADDI_A0 | lo << 20);
                }
            }
            a.reloc(elf::R_RISCV_CALL_PLT, Target::Symbol(call.callee), 0);
            a.w(AUIPC_RA);
            a.w(JALR_RA);
        }
        a.h(RESTORE_RA);
        a.restored(&[Reg::RA]);
        a.h(FREE_FRAME);
        a.cfa_offset(0);
        a.h(RET);
        a.function()
    }

    fn padding(&self, len: usize) -> Vec<u8> {
        // Functions are whole (2-byte multiple) instructions.
        NOP.to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect()
    }

    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode> {
        match which {
            Fatbin::Cuda => run(CUDA),
            Fatbin::Hip => run(HIP),
        }
    }

    fn attributes(&self) -> Option<(&'static [u8], elf::SectionType, Vec<u8>)> {
        Some((
            b".riscv.attributes",
            elf::SHT_RISCV_ATTRIBUTES,
            attributes(STACK_ALIGN, ARCH),
        ))
    }
}

/// A PC-relative displacement as the `auipc` immediate (upper 20 bits,
/// rounded so that the sign-extended low 12 bits add up) and the low 12
/// bits, each as the field's bits.
fn split(delta: i64) -> Result<(u32, u32)> {
    let hi = (delta + 0x800) >> 12;
    let lo = delta - (hi << 12);
    if !(-(1 << 19)..1 << 19).contains(&hi) {
        return Err(internal("an address is out of auipc's range"));
    }
    let bits = |x: i64, n: u32| u32::try_from(x & ((1 << n) - 1)).map_err(|_| internal("field"));
    Ok((bits(hi, 20)?, bits(lo, 12)?))
}

/// The `.riscv.attributes` section (the psABI's build attributes): format
/// version `A`, one vendor subsection `riscv` holding one file-scope
/// subsubsection with `Tag_RISCV_stack_align` and `Tag_RISCV_arch`, each
/// length a little-endian u32 counting itself.
fn attributes(stack_align: u8, arch: &str) -> Vec<u8> {
    /// `Tag_File`, `Tag_RISCV_stack_align`, `Tag_RISCV_arch`.
    const TAG_FILE: u8 = 1;
    const TAG_STACK_ALIGN: u8 = 4;
    const TAG_ARCH: u8 = 5;
    // Stack alignments are small: one ULEB128 byte.
    let mut file = vec![TAG_STACK_ALIGN, stack_align, TAG_ARCH];
    file.extend_from_slice(arch.as_bytes());
    file.push(0);
    let len32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let mut vendor = b"riscv\0".to_vec();
    vendor.push(TAG_FILE);
    vendor.extend_from_slice(&len32(file.len() + 5));
    vendor.extend_from_slice(&file);
    let mut out = vec![b'A'];
    out.extend_from_slice(&len32(vendor.len() + 4));
    out.extend_from_slice(&vendor);
    out
}

/// No label fixups yet: the OpenMP functions jump nowhere.
#[derive(Debug, Clone, Copy)]
enum NoFixup {}

impl asm::Fixup for NoFixup {
    fn apply(self, _code: &mut [u8], _at: usize, _target: usize) -> Result<()> {
        match self {}
    }
}

/// The shared assembler core.
type Asm = asm::Asm<NoFixup>;

/// RISC-V instructions on top of the core: 4-byte words and 2-byte
/// compressed halfwords, little-endian.
trait RvAsm {
    /// A 32-bit instruction.
    fn w(&mut self, word: u32);
    /// A 16-bit (RVC) instruction.
    fn h(&mut self, half: u16);
}

impl RvAsm for Asm {
    fn w(&mut self, word: u32) {
        self.bytes(&word.to_le_bytes());
    }

    fn h(&mut self, half: u16) {
        self.bytes(&half.to_le_bytes());
    }
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (docs/formats/wrapper-objects.md)
// ---------------------------------------------------------------------------

/// One step of the CUDA/HIP code as llc lays it out.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A function starts here.
    Begin,
    /// The function begun last ends here.
    End,
    /// A 2-byte (RVC) instruction.
    C(u16),
    /// A 4-byte instruction (calls and branches within the code included,
    /// their displacements fixed: the code does not depend on the input).
    I(u32),
    /// `auipc` of an address (`R_RISCV_PCREL_HI20`): the next numbered
    /// `.Lpcrel_hiN` label.
    Hi(u32, Target),
    /// `auipc` of an address in the code, resolved here: numbered too.
    Pc(u32),
    /// The low half of the address of label N (`%pcrel_lo`): the
    /// instruction and its relocation type (I or S form).
    Lo(u32, elf::RelocationType, u32),
    /// `call` a runtime function: `auipc ra` + `jalr ra`, one
    /// `R_RISCV_CALL_PLT`.
    Plt(&'static str),
    /// From here the CFA is this far above sp.
    Cfa(i32),
    /// The first N of [`SAVED`] are saved (at -8, -16, … from the CFA).
    Saved(usize),
    /// The first N of [`SAVED`] are restored.
    Restored(usize),
}

use Op::{Begin, C, Cfa, End, Hi, I, Lo, Pc, Plt, Restored, Saved};
use Target::{EntriesStart, EntriesStop, Handle, Wrapper};

/// `%pcrel_lo` forms: loads and `addi` (I), stores (S).
const LO_I: elf::RelocationType = elf::R_RISCV_PCREL_LO12_I;
const LO_S: elf::RelocationType = elf::R_RISCV_PCREL_LO12_S;

/// The callee-saved registers llc's prologues save, in order: ra, s0–s7.
const SAVED: [gimli::Register; 9] = [
    Reg::RA,
    Reg::S0,
    Reg::S1,
    Reg::S2,
    Reg::S3,
    Reg::S4,
    Reg::S5,
    Reg::S6,
    Reg::S7,
];

/// Assembles `ops`: the constructor, the `atexit` handler and the entry
/// loop, in that order.
fn run(ops: &[Op]) -> Result<FatbinCode> {
    let mut a = Asm::default();
    let mut spans = Vec::new();
    let mut labels: Vec<u64> = Vec::new();
    let slots = (1..).map(|k| -8 * k);
    for &op in ops {
        match op {
            Begin => a.begin(0),
            End => spans.push(a.end()),
            C(h) => a.h(h),
            I(w) => a.w(w),
            Hi(w, target) => {
                labels.push(a.here());
                a.reloc(elf::R_RISCV_PCREL_HI20, target, 0);
                a.w(w);
            }
            Pc(w) => {
                labels.push(a.here());
                a.w(w);
            }
            Lo(w, r_type, n) => {
                let at = usize::try_from(n)
                    .ok()
                    .and_then(|i| labels.get(i))
                    .ok_or_else(|| internal("a %pcrel_lo before its auipc"))?;
                a.reloc(r_type, Target::Label(*at, n), 0);
                a.w(w);
            }
            Plt(name) => {
                a.reloc(elf::R_RISCV_CALL_PLT, Target::Runtime(name), 0);
                a.w(AUIPC_RA);
                a.w(JALR_RA);
            }
            Cfa(cfa) => a.cfa_offset(cfa),
            Saved(n) => {
                let regs: Vec<_> = SAVED.iter().copied().zip(slots.clone()).take(n).collect();
                a.saved(&regs);
            }
            Restored(n) => a.restored(&SAVED[..n.min(SAVED.len())]),
        }
    }
    let [reg, unreg, globals]: [Span; 3] = spans
        .try_into()
        .map_err(|_| internal("the registration code is not three functions"))?;
    a.finish([reg, unreg, globals], &[])
}

/// LLVM 22's CUDA registration code for riscv64 (the same calls as on
/// x86-64): the constructor registers the fatbin, keeps the handle, runs
/// the entry loop (a local call), ends the registration and `atexit`s the
/// handler; the loop registers kernels, variables and managed variables.
#[rustfmt::skip]
const CUDA: &[Op] = &[
        Begin,
        C(0x1141), // 0: addi sp, sp, -0x10
        Cfa(16),
        C(0xe406), // 2: sd ra, 0x8(sp)
        C(0xe022), // 4: sd s0, 0x0(sp)
        Saved(2),
        Hi(0x0000_0517, Wrapper), // 6: auipc a0, 0x0
        Lo(0x0005_0513, LO_I, 0), // a: mv a0, a0
        Plt("__cudaRegisterFatBinary"), // e: call
        C(0x842a), // 16: mv s0, a0
        Hi(0x0000_0517, Handle), // 18: auipc a0, 0x0
        Lo(0x0085_3023, LO_S, 1), // 1c: sd s0, 0x0(a0)
        C(0x8522), // 20: mv a0, s0
        I(0x0000_0097), // 22: auipc ra, 0x0
        I(0x0440_80e7), // 26: jalr 0x44(ra) <.cuda.globals_reg>
        C(0x8522), // 2a: mv a0, s0
        Plt("__cudaRegisterFatBinaryEnd"), // 2c: call
        Pc(0x0000_0517), // 34: auipc a0, 0x0 (resolved here)
        I(0x0185_0513), // 38: addi a0, a0, 0x18
        Plt("atexit"), // 3c: call
        C(0x60a2), // 44: ld ra, 0x8(sp)
        C(0x6402), // 46: ld s0, 0x0(sp)
        Restored(2),
        C(0x0141), // 48: addi sp, sp, 0x10
        Cfa(0),
        C(0x8082), // 4a: ret
        End,
        Begin,
        C(0x1141), // 4c: addi sp, sp, -0x10
        Cfa(16),
        C(0xe406), // 4e: sd ra, 0x8(sp)
        Saved(1),
        Hi(0x0000_0517, Handle), // 50: auipc a0, 0x0
        Lo(0x0005_3503, LO_I, 3), // 54: ld a0, 0x0(a0)
        Plt("__cudaUnregisterFatBinary"), // 58: call
        C(0x60a2), // 60: ld ra, 0x8(sp)
        Restored(1),
        C(0x0141), // 62: addi sp, sp, 0x10
        Cfa(0),
        C(0x8082), // 64: ret
        End,
        Begin,
        C(0x715d), // 66: addi sp, sp, -0x50
        Cfa(80),
        C(0xe486), // 68: sd ra, 0x48(sp)
        C(0xe0a2), // 6a: sd s0, 0x40(sp)
        C(0xfc26), // 6c: sd s1, 0x38(sp)
        C(0xf84a), // 6e: sd s2, 0x30(sp)
        C(0xf44e), // 70: sd s3, 0x28(sp)
        C(0xf052), // 72: sd s4, 0x20(sp)
        C(0xec56), // 74: sd s5, 0x18(sp)
        Saved(7),
        Hi(0x0000_0597, EntriesStop), // 76: auipc a1, 0x0
        Hi(0x0000_0617, EntriesStart), // 7a: auipc a2, 0x0
        Lo(0x0005_8993, LO_I, 4), // 7e: mv s3, a1
        Lo(0x0006_0493, LO_I, 5), // 82: mv s1, a2
        I(0x0934_8863), // 86: beq s1, s3, 0x116 <.Lpcrel_hi5+0x9c>
        C(0x892a), // 8a: mv s2, a0
        C(0x4a09), // 8c: li s4, 0x2
        C(0x4a85), // 8e: li s5, 0x1
        C(0xa015), // 90: j 0xb4 <.Lpcrel_hi5+0x3a>
        C(0x577d), // 92: li a4, -0x1
        C(0xe002), // 94: sd zero, 0x0(sp)
        C(0xe402), // 96: sd zero, 0x8(sp)
        C(0x854a), // 98: mv a0, s2
        C(0x85b2), // 9a: mv a1, a2
        C(0x8636), // 9c: mv a2, a3
        C(0x4781), // 9e: li a5, 0x0
        C(0x4801), // a0: li a6, 0x0
        C(0x4881), // a2: li a7, 0x0
        Plt("__cudaRegisterFunction"), // a4: call
        I(0x0384_8493), // ac: addi s1, s1, 0x38
        I(0x0734_8363), // b0: beq s1, s3, 0x116 <.Lpcrel_hi5+0x9c>
        I(0x00a4_d503), // b4: lhu a0, 0xa(s1)
        I(0xff45_1ae3), // b8: bne a0, s4, 0xac <.Lpcrel_hi5+0x32>
        C(0x50c8), // bc: lw a0, 0x24(s1)
        I(0x0204_e583), // be: lwu a1, 0x20(s1)
        C(0x6890), // c2: ld a2, 0x10(s1)
        C(0x6c94), // c4: ld a3, 0x18(s1)
        C(0x1502), // c6: slli a0, a0, 0x20
        I(0x00b5_6433), // c8: or s0, a0, a1
        C(0xd079), // cc: beqz s0, 0x92 <.Lpcrel_hi5+0x18>
        C(0x44c8), // ce: lw a0, 0xc(s1)
        I(0x0075_7593), // d0: andi a1, a0, 0x7
        I(0x0355_8363), // d4: beq a1, s5, 0xfa <.Lpcrel_hi5+0x80>
        C(0xf9f1), // d8: bnez a1, 0xac <.Lpcrel_hi5+0x32>
        I(0x03c5_1713), // da: slli a4, a0, 0x3c
        C(0x156e), // de: slli a0, a0, 0x3b
        C(0x937d), // e0: srli a4, a4, 0x3f
        I(0x03f5_5813), // e2: srli a6, a0, 0x3f
        C(0x854a), // e6: mv a0, s2
        C(0x85b2), // e8: mv a1, a2
        C(0x8636), // ea: mv a2, a3
        C(0x87a2), // ec: mv a5, s0
        C(0x4881), // ee: li a7, 0x0
        Plt("__cudaRegisterVar"), // f0: call
        C(0xbf55), // f8: j 0xac <.Lpcrel_hi5+0x32>
        C(0x54c8), // fa: lw a0, 0x2c(s1)
        I(0x0284_e703), // fc: lwu a4, 0x28(s1)
        C(0x788c), // 100: ld a1, 0x30(s1)
        C(0x1502), // 102: slli a0, a0, 0x20
        I(0x00e5_67b3), // 104: or a5, a0, a4
        C(0x854a), // 108: mv a0, s2
        C(0x8722), // 10a: mv a4, s0
        Plt("__cudaRegisterManagedVar"), // 10c: call
        C(0xbf61), // 114: j 0xac <.Lpcrel_hi5+0x32>
        C(0x60a6), // 116: ld ra, 0x48(sp)
        C(0x6406), // 118: ld s0, 0x40(sp)
        C(0x74e2), // 11a: ld s1, 0x38(sp)
        C(0x7942), // 11c: ld s2, 0x30(sp)
        C(0x79a2), // 11e: ld s3, 0x28(sp)
        C(0x7a02), // 120: ld s4, 0x20(sp)
        C(0x6ae2), // 122: ld s5, 0x18(sp)
        Restored(7),
        C(0x6161), // 124: addi sp, sp, 0x50
        Cfa(0),
        C(0x8082), // 126: ret
        End,
];

/// LLVM 22's HIP registration code for riscv64: as CUDA's without the end
/// of registration, kind HIP (4), and surfaces and textures too (a tree of
/// compares on the entry type).
#[rustfmt::skip]
const HIP: &[Op] = &[
        Begin,
        C(0x1141), // 0: addi sp, sp, -0x10
        Cfa(16),
        C(0xe406), // 2: sd ra, 0x8(sp)
        Saved(1),
        Hi(0x0000_0517, Wrapper), // 4: auipc a0, 0x0
        Lo(0x0005_0513, LO_I, 0), // 8: mv a0, a0
        Plt("__hipRegisterFatBinary"), // c: call
        Hi(0x0000_0597, Handle), // 14: auipc a1, 0x0
        Lo(0x00a5_b023, LO_S, 1), // 18: sd a0, 0x0(a1)
        I(0x0000_0097), // 1c: auipc ra, 0x0
        I(0x0380_80e7), // 20: jalr 0x38(ra) <.hip.globals_reg>
        Pc(0x0000_0517), // 24: auipc a0, 0x0 (resolved here)
        I(0x0165_0513), // 28: addi a0, a0, 0x16
        Plt("atexit"), // 2c: call
        C(0x60a2), // 34: ld ra, 0x8(sp)
        Restored(1),
        C(0x0141), // 36: addi sp, sp, 0x10
        Cfa(0),
        C(0x8082), // 38: ret
        End,
        Begin,
        C(0x1141), // 3a: addi sp, sp, -0x10
        Cfa(16),
        C(0xe406), // 3c: sd ra, 0x8(sp)
        Saved(1),
        Hi(0x0000_0517, Handle), // 3e: auipc a0, 0x0
        Lo(0x0005_3503, LO_I, 3), // 42: ld a0, 0x0(a0)
        Plt("__hipUnregisterFatBinary"), // 46: call
        C(0x60a2), // 4e: ld ra, 0x8(sp)
        Restored(1),
        C(0x0141), // 50: addi sp, sp, 0x10
        Cfa(0),
        C(0x8082), // 52: ret
        End,
        Begin,
        C(0x711d), // 54: addi sp, sp, -0x60
        Cfa(96),
        C(0xec86), // 56: sd ra, 0x58(sp)
        C(0xe8a2), // 58: sd s0, 0x50(sp)
        C(0xe4a6), // 5a: sd s1, 0x48(sp)
        C(0xe0ca), // 5c: sd s2, 0x40(sp)
        C(0xfc4e), // 5e: sd s3, 0x38(sp)
        C(0xf852), // 60: sd s4, 0x30(sp)
        C(0xf456), // 62: sd s5, 0x28(sp)
        C(0xf05a), // 64: sd s6, 0x20(sp)
        C(0xec5e), // 66: sd s7, 0x18(sp)
        Saved(9),
        Hi(0x0000_0597, EntriesStop), // 68: auipc a1, 0x0
        Hi(0x0000_0617, EntriesStart), // 6c: auipc a2, 0x0
        Lo(0x0005_8993, LO_I, 4), // 70: mv s3, a1
        Lo(0x0006_0413, LO_I, 5), // 74: mv s0, a2
        I(0x0d34_0863), // 78: beq s0, s3, 0x148 <.Lpcrel_hi5+0xdc>
        C(0x892a), // 7c: mv s2, a0
        C(0x4a11), // 7e: li s4, 0x4
        C(0x4a85), // 80: li s5, 0x1
        C(0x4b09), // 82: li s6, 0x2
        C(0x4b8d), // 84: li s7, 0x3
        C(0xa00d), // 86: j 0xa8 <.Lpcrel_hi5+0x3c>
        C(0x577d), // 88: li a4, -0x1
        C(0xe002), // 8a: sd zero, 0x0(sp)
        C(0xe402), // 8c: sd zero, 0x8(sp)
        C(0x854a), // 8e: mv a0, s2
        C(0x85b2), // 90: mv a1, a2
        C(0x8636), // 92: mv a2, a3
        C(0x4801), // 94: li a6, 0x0
        C(0x4881), // 96: li a7, 0x0
        Plt("__hipRegisterFunction"), // 98: call
        I(0x0384_0413), // a0: addi s0, s0, 0x38
        I(0x0b34_0263), // a4: beq s0, s3, 0x148 <.Lpcrel_hi5+0xdc>
        I(0x00a4_5503), // a8: lhu a0, 0xa(s0)
        I(0xff45_1ae3), // ac: bne a0, s4, 0xa0 <.Lpcrel_hi5+0x34>
        C(0x5048), // b0: lw a0, 0x24(s0)
        I(0x0204_6583), // b2: lwu a1, 0x20(s0)
        C(0x6810), // b6: ld a2, 0x10(s0)
        C(0x6c14), // b8: ld a3, 0x18(s0)
        C(0x1502), // ba: slli a0, a0, 0x20
        I(0x00b5_67b3), // bc: or a5, a0, a1
        C(0xd7e1), // c0: beqz a5, 0x88 <.Lpcrel_hi5+0x1c>
        C(0x544c), // c2: lw a1, 0x2c(s0)
        C(0x4448), // c4: lw a0, 0xc(s0)
        I(0x0284_6703), // c6: lwu a4, 0x28(s0)
        I(0x0205_9493), // ca: slli s1, a1, 0x20
        I(0x0075_7593), // ce: andi a1, a0, 0x7
        I(0x00e4_e833), // d2: or a6, s1, a4
        I(0x03c5_1493), // d6: slli s1, a0, 0x3c
        C(0x90fd), // da: srli s1, s1, 0x3f
        I(0x00ba_ce63), // dc: blt s5, a1, 0xf8 <.Lpcrel_hi5+0x8c>
        C(0xcd8d), // e0: beqz a1, 0x11a <.Lpcrel_hi5+0xae>
        I(0xfb55_9fe3), // e2: bne a1, s5, 0xa0 <.Lpcrel_hi5+0x34>
        C(0x780c), // e6: ld a1, 0x30(s0)
        C(0x854a), // e8: mv a0, s2
        C(0x873e), // ea: mv a4, a5
        C(0x87c2), // ec: mv a5, a6
        Plt("__hipRegisterManagedVar"), // ee: call
        C(0xb76d), // f6: j 0xa0 <.Lpcrel_hi5+0x34>
        I(0x0365_8e63), // f8: beq a1, s6, 0x134 <.Lpcrel_hi5+0xc8>
        I(0xfb75_92e3), // fc: bne a1, s7, 0xa0 <.Lpcrel_hi5+0x34>
        C(0x156a), // 100: slli a0, a0, 0x3a
        I(0x03f5_5793), // 102: srli a5, a0, 0x3f
        C(0x854a), // 106: mv a0, s2
        C(0x85b2), // 108: mv a1, a2
        C(0x8636), // 10a: mv a2, a3
        C(0x8742), // 10c: mv a4, a6
        C(0x8826), // 10e: mv a6, s1
        Plt("__hipRegisterTexture"), // 110: call
        C(0xb761), // 118: j 0xa0 <.Lpcrel_hi5+0x34>
        C(0x156e), // 11a: slli a0, a0, 0x3b
        I(0x03f5_5813), // 11c: srli a6, a0, 0x3f
        C(0x854a), // 120: mv a0, s2
        C(0x85b2), // 122: mv a1, a2
        C(0x8636), // 124: mv a2, a3
        C(0x8726), // 126: mv a4, s1
        C(0x4881), // 128: li a7, 0x0
        Plt("__hipRegisterVar"), // 12a: call
        C(0xb7bd), // 132: j 0xa0 <.Lpcrel_hi5+0x34>
        C(0x854a), // 134: mv a0, s2
        C(0x85b2), // 136: mv a1, a2
        C(0x8636), // 138: mv a2, a3
        C(0x8742), // 13a: mv a4, a6
        C(0x87a6), // 13c: mv a5, s1
        Plt("__hipRegisterSurface"), // 13e: call
        C(0xbfa9), // 146: j 0xa0 <.Lpcrel_hi5+0x34>
        C(0x60e6), // 148: ld ra, 0x58(sp)
        C(0x6446), // 14a: ld s0, 0x50(sp)
        C(0x64a6), // 14c: ld s1, 0x48(sp)
        C(0x6906), // 14e: ld s2, 0x40(sp)
        C(0x79e2), // 150: ld s3, 0x38(sp)
        C(0x7a42), // 152: ld s4, 0x30(sp)
        C(0x7aa2), // 154: ld s5, 0x28(sp)
        C(0x7b02), // 156: ld s6, 0x20(sp)
        C(0x6be2), // 158: ld s7, 0x18(sp)
        Restored(9),
        C(0x6125), // 15a: addi sp, sp, 0x60
        Cfa(0),
        C(0x8082), // 15c: ret
        End,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    /// LLVM 22's constructor for one image: register the descriptor, then
    /// `atexit` the destructor at 0x2a (auipc/addi resolved in place).
    #[test]
    fn constructor_bytes_and_relocations() {
        let [reg, atexit, desc, text] = [0, 1, 2, 3].map(SymbolId::nth);
        let calls = [
            Call {
                callee: reg,
                arg: Arg::Data {
                    symbol: desc,
                    section: desc,
                    offset: 0x20,
                    merged: false,
                },
            },
            Call {
                callee: atexit,
                arg: Arg::Code {
                    section: text,
                    offset: 0x2a,
                },
            },
        ];
        let f = Riscv64.function(0, &calls).unwrap();
        // llvm-objdump -d of llc's object.
        let want: Vec<u8> = [
            &[0x41, 0x11, 0x06, 0xe4][..],
            &[0x17, 0x05, 0, 0, 0x13, 0x05, 0x05, 0],
            &[0x97, 0, 0, 0, 0xe7, 0x80, 0, 0],
            &[0x17, 0x05, 0, 0, 0x13, 0x05, 0x65, 0x01],
            &[0x97, 0, 0, 0, 0xe7, 0x80, 0, 0],
            &[0xa2, 0x60, 0x41, 0x01, 0x82, 0x80],
        ]
        .concat();
        assert_eq!(f.code, want);
        let relocs: Vec<_> = f
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.target, r.addend))
            .collect();
        assert_eq!(
            relocs,
            [
                (4, elf::R_RISCV_PCREL_HI20, Target::Symbol(desc), 0),
                (8, elf::R_RISCV_PCREL_LO12_I, Target::Label(4, 0), 0),
                (12, elf::R_RISCV_CALL_PLT, Target::Symbol(reg), 0),
                (28, elf::R_RISCV_CALL_PLT, Target::Symbol(atexit), 0),
            ]
        );
        let offsets: Vec<u32> = f.cfi.iter().map(|c| c.0).collect();
        assert_eq!(offsets, [2, 4, 0x26, 0x28]);
    }

    /// The CUDA and HIP code: llc's sizes and function offsets, and the
    /// `%pcrel_lo`s naming the labels llc lists (`.Lpcrel_hi2`, the
    /// `atexit` argument's, is resolved in place).
    #[test]
    fn fatbin_code_as_llc_lays_it_out() {
        for (which, len, unreg, globals) in [
            (Fatbin::Cuda, 0x128, 0x4c, 0x66),
            (Fatbin::Hip, 0x15e, 0x3a, 0x54),
        ] {
            let c = Riscv64.fatbin_code(which).unwrap();
            assert_eq!(c.code.len(), len);
            assert_eq!(
                (c.reg.offset, c.unreg.offset, c.globals.offset),
                (0, unreg, globals)
            );
            assert_eq!(c.globals.offset + c.globals.len, len as u64);
            let numbers: Vec<u32> = c
                .relocs
                .iter()
                .filter_map(|r| match r.target {
                    Target::Label(_, n) => Some(n),
                    _ => None,
                })
                .collect();
            assert_eq!(numbers, [0, 1, 3, 4, 5], "{which:?}");
            // Every epilogue ends at a CFA of 0.
            for span in [&c.reg, &c.unreg, &c.globals] {
                let last = span.cfi.last().unwrap();
                assert_eq!(last.1, gimli::write::CallFrameInstruction::CfaOffset(0));
            }
        }
    }

    #[test]
    fn displacements_split_as_auipc_and_addi() {
        assert_eq!(split(0x16).unwrap(), (0, 0x16));
        assert_eq!(split(0x800).unwrap(), (1, 0x800));
        assert_eq!(split(-4).unwrap(), (0, 0xffc));
        assert!(split(1 << 40).is_err());
    }

    /// The section llc writes for `-mattr=+m,+a,+f,+d,+c` (0x68 bytes).
    #[test]
    fn attributes_section() {
        let a = attributes(STACK_ALIGN, ARCH);
        assert_eq!(a.len(), 0x68);
        assert_eq!(
            a[..0x13],
            *b"\x41\x67\x00\x00\x00riscv\x00\x01\x5d\x00\x00\x00\x04\x10\x05"
        );
        assert_eq!(a.last(), Some(&0));
    }
}
