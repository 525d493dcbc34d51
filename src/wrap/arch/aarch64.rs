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

use super::{Arg, Call, CodeReloc, Cpu, Fatbin, FatbinCode, Function, addend};
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
        let kind = match which {
            Fatbin::Cuda => "cuda",
            Fatbin::Hip => "hip",
        };
        Err(Error::usage(format!(
            "--kind={kind} is not supported for aarch64 yet (supported: x86_64)"
        )))
    }
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
