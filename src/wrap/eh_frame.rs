//! `.eh_frame` for the wrapper's functions, built with `gimli::write`.
//!
//! One CIE from the CPU table and one FDE per function. The FDEs' initial
//! locations are `DW_EH_PE_pcrel | DW_EH_PE_sdata4` pointers to the code
//! section; gimli reports each as a relocation through
//! [`gimli::write::RelocateWriter`], and this module turns them into the
//! CPU's 32-bit PC-relative ELF relocation (what LLVM writes: one
//! `R_X86_64_PC32` against `.text.startup` per function on x86-64).

use super::arch::{CpuInfo, addend};
use super::relocatable::{Reloc, Relocatable, SectionId, SymbolId};
use crate::error::{Error, Result};
use gimli::write::{
    Address, CallFrameInstruction, EhFrame, EndianVec, FrameDescriptionEntry, FrameTable,
    RelocateWriter, Relocation, RelocationTarget,
};
use gimli::{DW_EH_PE_pcrel, DW_EH_PE_sdata4, Endianity, RunTimeEndian};

/// A function to describe: its offset and length in the code section, and
/// its unwind rules.
pub(crate) struct Fde<'f> {
    /// Offset in the code section.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// (code offset, rule) pairs.
    pub cfi: &'f [(u32, CallFrameInstruction)],
    /// A local symbol at the function's start that the FDE's relocation
    /// refers to instead of the code section's symbol (riscv64's `.L0 `).
    pub anchor: Option<SymbolId>,
}

/// Section data plus the relocations gimli asked for.
struct Section {
    data: EndianVec<RunTimeEndian>,
    relocs: Vec<Relocation>,
}

impl RelocateWriter for Section {
    type Writer = EndianVec<RunTimeEndian>;

    fn writer(&self) -> &Self::Writer {
        &self.data
    }

    fn writer_mut(&mut self) -> &mut Self::Writer {
        &mut self.data
    }

    fn relocate(&mut self, relocation: Relocation) {
        self.relocs.push(relocation);
    }
}

fn emit_error(detail: impl std::fmt::Display) -> Error {
    Error::write(".eh_frame", detail)
}

/// Pads the last record to a multiple of 8 bytes, as LLVM does: gimli pads
/// every CIE and FDE to the CPU's [`CommonInformationEntry`] address size
/// (4 for 64-bit CPUs, LLVM's record alignment), while LLVM pads the last
/// FDE of the section to the pointer size, so that the section's size is a
/// multiple of 8. The padding is `DW_CFA_nop`s (zero bytes) counted in the
/// record's length.
///
/// [`CommonInformationEntry`]: gimli::write::CommonInformationEntry
fn pad_last_record(data: &mut Vec<u8>, endian: RunTimeEndian) -> Result<()> {
    if data.len().is_multiple_of(8) {
        return Ok(());
    }
    let mut at = 0usize;
    loop {
        let field = data
            .get(at..at + 4)
            .ok_or_else(|| emit_error("a record runs past the end"))?;
        let len = endian.read_u32(field);
        let next = at + 4 + usize::try_from(len).map_err(emit_error)?;
        if next >= data.len() {
            if next != data.len() || !data.len().is_multiple_of(4) {
                return Err(emit_error("records do not end at 4-byte boundaries"));
            }
            data.extend_from_slice(&[0; 4]);
            endian.write_u32(&mut data[at..at + 4], len + 4);
            return Ok(());
        }
        at = next;
    }
}

/// Adds `.eh_frame` to `obj` (writable if `writable`), with one FDE per
/// entry of `fdes`, whose offsets are relative to the section with section
/// symbol `code`.
pub(crate) fn add(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    code: SymbolId,
    fdes: &[Fde<'_>],
    writable: bool,
) -> Result<SectionId> {
    let mut table = FrameTable::default();
    let cie = table.add_cie(cpu.cie());
    for (i, f) in fdes.iter().enumerate() {
        let len = u32::try_from(f.len).map_err(emit_error)?;
        // Symbol 0 of gimli's numbering is `code`, symbol i + 1 the anchor
        // of FDE i.
        let address = match f.anchor {
            Some(_) => Address::Symbol {
                symbol: i + 1,
                addend: 0,
            },
            None => Address::Symbol {
                symbol: 0,
                addend: addend(f.offset)?,
            },
        };
        let mut fde = FrameDescriptionEntry::new(address, len);
        for (at, insn) in f.cfi {
            fde.add_instruction(*at, insn.clone());
        }
        table.add_fde(cie, fde);
    }
    let endian = match cpu.endian {
        object::Endianness::Little => RunTimeEndian::Little,
        object::Endianness::Big => RunTimeEndian::Big,
    };
    let mut w = EhFrame(Section {
        data: EndianVec::new(endian),
        relocs: Vec::new(),
    });
    table.write_eh_frame(&mut w).map_err(emit_error)?;
    let Section { data, relocs } = w.0;
    let mut data = data.into_vec();
    pad_last_record(&mut data, endian)?;

    let flags = if writable {
        object::elf::SHF_ALLOC | object::elf::SHF_WRITE
    } else {
        object::elf::SHF_ALLOC
    };
    let id = obj.add_section(b".eh_frame", cpu.eh_frame_type, flags, 8);
    obj.set_bytes(id, data);
    for r in relocs {
        let pcrel32 = r.eh_pe == Some(DW_EH_PE_pcrel | DW_EH_PE_sdata4) && r.size == 4;
        let symbol = match r.target {
            RelocationTarget::Symbol(0) => Some(code),
            RelocationTarget::Symbol(i) => fdes.get(i - 1).and_then(|f| f.anchor),
            _ => None,
        };
        let (true, Some(symbol)) = (pcrel32, symbol) else {
            return Err(emit_error(format!("unexpected relocation {r:?}")));
        };
        obj.add_reloc(
            id,
            Reloc {
                offset: u64::try_from(r.offset).map_err(emit_error)?,
                symbol,
                r_type: cpu.eh_pcrel32,
                addend: r.addend,
            },
        );
    }
    Ok(id)
}
