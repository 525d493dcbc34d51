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
//! The CUDA and HIP registration code is not written yet.

use gimli::RiscV as Reg;
use object::elf;

use super::asm;
use super::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Target, internal};
use crate::error::{Error, Result};

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
        for call in calls {
            match call.arg {
                Arg::Data { symbol, .. } => {
                    let label = a.in_function();
                    a.reloc(elf::R_RISCV_PCREL_HI20, Target::Symbol(symbol), 0);
                    a.w(AUIPC_A0);
                    a.reloc(elf::R_RISCV_PCREL_LO12_I, Target::Label(label), 0);
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

    fn fatbin_code(&self, _which: Fatbin) -> Result<FatbinCode> {
        Err(Error::usage(
            "--kind=cuda and --kind=hip are not supported yet for riscv64",
        ))
    }

    fn attributes(&self) -> Option<Vec<u8>> {
        Some(attributes(STACK_ALIGN, ARCH))
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
                (8, elf::R_RISCV_PCREL_LO12_I, Target::Label(4), 0),
                (12, elf::R_RISCV_CALL_PLT, Target::Symbol(reg), 0),
                (28, elf::R_RISCV_CALL_PLT, Target::Symbol(atexit), 0),
            ]
        );
        let offsets: Vec<u32> = f.cfi.iter().map(|c| c.0).collect();
        assert_eq!(offsets, [2, 4, 0x26, 0x28]);
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
