//! x86-64 (System V psABI, LP64), as LLVM 22's `llc -relocation-model=pic`
//! encodes the wrapper's functions (wrapper-abi.md §4.4, Appendix A):
//!
//! ```text
//! push rax                     ; 16-byte stack alignment at each call
//! lea  rdi, [rip + arg]        ; R_X86_64_PC32 arg - 4 (none for a function in the same section)
//! call callee                  ; R_X86_64_PLT32 callee - 4
//! …                            ; one lea/call pair per call
//! pop  rax
//! ret
//! ```

use gimli::write::{CallFrameInstruction, CommonInformationEntry};
use gimli::{DW_EH_PE_pcrel, DW_EH_PE_sdata4, Encoding, Format, X86_64 as Reg};
use object::elf;

use super::{Arg, Call, CodeReloc, Cpu, Function, addend};
use crate::error::{Error, Result};

/// The x86-64 encoder.
pub(crate) struct X86_64;

/// `push rax`
const PUSH_RAX: u8 = 0x50;
/// `lea rdi, [rip + disp32]`: REX.W, opcode, ModRM (rdi, RIP-relative).
const LEA_RDI_RIP: [u8; 3] = [0x48, 0x8d, 0x3d];
/// `call rel32`
const CALL_REL32: u8 = 0xe8;
/// `pop rax`
const POP_RAX: u8 = 0x58;
/// `ret`
const RET: u8 = 0xc3;

/// The recommended multi-byte NOPs (Intel SDM, "NOP"), by length 1..=9.
const NOPS: [&[u8]; 9] = [
    &[0x90],                                           // nop
    &[0x66, 0x90],                                     // xchg ax, ax
    &[0x0f, 0x1f, 0x00],                               // nop [rax]
    &[0x0f, 0x1f, 0x40, 0x00],                         // nop [rax + 0]
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],                   // nop [rax + rax + 0]
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],             // nop [rax + rax + 0] (16-bit)
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],       // nop [rax + 0] (disp32)
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00], // nop [rax + rax + 0] (disp32)
    &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
];

impl Cpu for X86_64 {
    fn machine(&self) -> elf::Machine {
        elf::EM_X86_64
    }

    fn e_flags(&self) -> u32 {
        // The psABI defines no flags.
        0
    }

    fn code_align(&self) -> u64 {
        16
    }

    fn data_align(&self) -> u64 {
        // LLVM aligns global arrays of 16 bytes or more to 16 on x86-64.
        16
    }

    fn abs64(&self) -> elf::RelocationType {
        elf::R_X86_64_64
    }

    fn eh_pcrel32(&self) -> elf::RelocationType {
        elf::R_X86_64_PC32
    }

    fn eh_frame_type(&self) -> elf::SectionType {
        elf::SHT_X86_64_UNWIND
    }

    fn cie(&self) -> CommonInformationEntry {
        let encoding = Encoding {
            format: Format::Dwarf32,
            // .eh_frame CIEs are version 1.
            version: 1,
            address_size: 8,
        };
        // Code alignment 1: x86 instructions are byte-aligned. Data alignment
        // -8: saved registers sit in 8-byte slots below the CFA.
        let mut cie = CommonInformationEntry::new(encoding, 1, -8, Reg::RA);
        cie.fde_address_encoding = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
        // On entry the CFA is rsp + 8 and the return address is at CFA - 8.
        cie.add_instruction(CallFrameInstruction::Cfa(Reg::RSP, 8));
        cie.add_instruction(CallFrameInstruction::Offset(Reg::RA, -8));
        cie
    }

    fn function(&self, at: u64, calls: &[Call]) -> Result<Function> {
        let mut f = Function::default();
        f.code.push(PUSH_RAX);
        f.cfi
            .push((cfi_offset(&f.code)?, CallFrameInstruction::CfaOffset(16)));
        for call in calls {
            f.code.extend_from_slice(&LEA_RDI_RIP);
            let field = len64(&f.code);
            match call.arg {
                Arg::Data {
                    section, offset, ..
                } => {
                    // S + A - P with P the field: the target is relative to
                    // the end of the instruction, 4 bytes further.
                    f.relocs.push(CodeReloc {
                        offset: field,
                        r_type: elf::R_X86_64_PC32,
                        symbol: section,
                        addend: addend(offset)? - 4,
                    });
                    f.code.extend_from_slice(&[0; 4]);
                }
                Arg::Code { offset, .. } => {
                    // Same section: the assembler resolves it, no relocation.
                    let next = at + field + 4;
                    let disp = i32::try_from(addend(offset)? - addend(next)?)
                        .map_err(|_| Error::usage("wrapper code too large"))?;
                    f.code.extend_from_slice(&disp.to_le_bytes());
                }
            }
            f.code.push(CALL_REL32);
            f.relocs.push(CodeReloc {
                offset: len64(&f.code),
                r_type: elf::R_X86_64_PLT32,
                symbol: call.callee,
                addend: -4,
            });
            f.code.extend_from_slice(&[0; 4]);
        }
        f.code.push(POP_RAX);
        f.cfi
            .push((cfi_offset(&f.code)?, CallFrameInstruction::CfaOffset(8)));
        f.code.push(RET);
        Ok(f)
    }

    fn padding(&self, mut len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        while len > 0 {
            let n = len.min(NOPS.len());
            v.extend_from_slice(NOPS[n - 1]);
            len -= n;
        }
        v
    }
}

fn len64(code: &[u8]) -> u64 {
    // A function is a few dozen bytes; usize always fits in u64 here.
    u64::try_from(code.len()).unwrap_or(u64::MAX)
}

fn cfi_offset(code: &[u8]) -> Result<u32> {
    u32::try_from(code.len()).map_err(|_| Error::usage("wrapper function too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    fn syms() -> (SymbolId, SymbolId, SymbolId) {
        (SymbolId::nth(0), SymbolId::nth(1), SymbolId::nth(2))
    }

    /// The constructor LLVM 22 writes (Appendix A): register the descriptor
    /// at `.data.rel.ro + 0x20`, then `atexit` the function at 0x20.
    #[test]
    fn llvm_constructor_bytes() {
        let (f, g, sec) = syms();
        let calls = [
            Call {
                callee: f,
                arg: Arg::Data {
                    symbol: sec,
                    section: sec,
                    offset: 0x20,
                },
            },
            Call {
                callee: g,
                arg: Arg::Code {
                    section: sec,
                    offset: 0x20,
                },
            },
        ];
        let func = X86_64.function(0, &calls).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0x50,                                     // push rax
            0x48, 0x8d, 0x3d, 0x00, 0x00, 0x00, 0x00, // lea rdi, [rip + desc]
            0xe8, 0x00, 0x00, 0x00, 0x00,             // call __tgt_register_lib
            0x48, 0x8d, 0x3d, 0x0c, 0x00, 0x00, 0x00, // lea rdi, [rip + 0xc] (unreg at 0x20)
            0xe8, 0x00, 0x00, 0x00, 0x00,             // call atexit
            0x58,                                     // pop rax
            0xc3,                                     // ret
        ];
        assert_eq!(func.code, want);
        let relocs: Vec<(u64, elf::RelocationType, i64)> = func
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.addend))
            .collect();
        assert_eq!(
            relocs,
            [
                (4, elf::R_X86_64_PC32, 0x1c),
                (9, elf::R_X86_64_PLT32, -4),
                (0x15, elf::R_X86_64_PLT32, -4),
            ]
        );
        assert_eq!(func.cfi[0].0, 1);
        assert_eq!(func.cfi[1].0, 0x1a);
        // The padding to 0x20 is LLVM's 5-byte NOP.
        assert_eq!(X86_64.padding(5), [0x0f, 0x1f, 0x44, 0x00, 0x00]);
    }

    #[test]
    fn padding_lengths() {
        for n in 0..40 {
            assert_eq!(X86_64.padding(n).len(), n);
        }
    }
}
