//! The wrapper's ELF relocatable object: a small model (sections, symbols,
//! relocations) and its writer, built on object's ELF [`Encoder`].
//!
//! The file is laid out the way LLVM 22's ELF object writer (`llc
//! -filetype=obj`) lays out the same object, so that for the same input the
//! two files are byte-identical:
//!
//! - Section headers: the null section, `.strtab`, then every section in the
//!   order it was added, each followed by its `.rela` section when it has
//!   relocations, and `.symtab` last.
//! - One string table for section and symbol names, built as LLVM's
//!   `StringTableBuilder` builds it ([`StringTable`]); `e_shstrndx` is 1.
//! - File contents: the ELF header, the sections' contents in section order
//!   (each at its alignment), `.symtab`, the `.rela` sections in order,
//!   `.strtab`, then the section header table at the next multiple of 8.
//! - Symbols: the local ones in the order they were added, then the others
//!   in the order they were added (matching LLVM's writer's order is the
//!   caller's business; `sh_info` of `.symtab` is the first global's index).
//!
//! A section can hold the input images instead of built bytes: they appear
//! in the [`Layout`](crate::layout::Layout) as
//! [`Piece::Image`](crate::layout::Piece::Image)s and are never read. Such
//! a section can also start at a larger file alignment than its
//! `sh_addralign` (the wrapper's fast layout for large images); everything
//! else is unchanged.
//!
//! The model is here; `write.rs` writes the file.

use object::Endianness;
use object::elf;

use crate::error::{Error, Result};
use crate::num::len64;

mod write;

/// A section of a [`Relocatable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionId(usize);

/// A symbol of a [`Relocatable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SymbolId(usize);

impl SymbolId {
    /// The symbol added `n`-th (from 0); for tests of code that only
    /// passes symbols through.
    #[cfg(test)]
    pub(crate) fn nth(n: usize) -> SymbolId {
        SymbolId(n)
    }
}

/// Where a symbol is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Nowhere: defined by another object or the linker.
    Undefined,
    /// Nowhere in particular (`SHN_ABS`, the file symbol).
    Absolute,
    /// In this section.
    Section(SectionId),
}

/// A relocation, RELA style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reloc {
    /// Offset in the section it applies to.
    pub offset: u64,
    /// The symbol whose address is used.
    pub symbol: SymbolId,
    /// ELF relocation type.
    pub r_type: elf::RelocationType,
    /// Addend.
    pub addend: i64,
}

#[derive(Debug)]
enum Contents {
    /// Bytes built here.
    Bytes(Vec<u8>),
    /// The caller's images: (offset in the section, length) of image `i`;
    /// the gaps are zeros.
    Images(Vec<(u64, u64)>),
    /// This many bytes that take no room in the file (`SHT_NOBITS`).
    NoBits(u64),
}

#[derive(Debug)]
struct Section {
    name: Vec<u8>,
    sh_type: elf::SectionType,
    sh_flags: elf::SectionFlags,
    align: u64,
    /// Alignment of the section's start in the file (at least `align`).
    file_align: u64,
    /// `sh_entsize`: the size of each entry of a mergeable section.
    entsize: u64,
    contents: Contents,
    relocs: Vec<Reloc>,
    symbol: Option<SymbolId>,
}

impl Section {
    fn size(&self) -> u64 {
        match &self.contents {
            Contents::Bytes(b) => len64(b),
            Contents::Images(placed) => placed
                .iter()
                .map(|&(off, len)| off + len)
                .max()
                .unwrap_or(0),
            Contents::NoBits(n) => *n,
        }
    }

    /// Bytes the section takes in the file.
    fn file_size(&self) -> u64 {
        match self.contents {
            Contents::NoBits(_) => 0,
            _ => self.size(),
        }
    }
}

#[derive(Debug)]
struct Symbol {
    name: Vec<u8>,
    st_info: elf::SymbolInfo,
    st_other: elf::SymbolOther,
    place: Place,
    value: u64,
    size: u64,
}

/// An ELF64 relocatable object under construction.
#[derive(Debug)]
pub(crate) struct Relocatable {
    machine: elf::Machine,
    /// Byte order of every header, table and built section.
    endian: Endianness,
    os_abi: elf::OsAbi,
    e_flags: u32,
    sections: Vec<Section>,
    symbols: Vec<Symbol>,
}

fn write_error(detail: impl std::fmt::Display) -> Error {
    Error::write("ELF object", detail)
}

fn align_up(x: u64, a: u64) -> Result<u64> {
    x.checked_next_multiple_of(a.max(1))
        .ok_or_else(|| Error::too_large("the wrapper object"))
}

impl Relocatable {
    /// An empty object for `machine` with these `e_flags`, in `endian`
    /// byte order.
    pub(crate) fn new(machine: elf::Machine, e_flags: u32, endian: Endianness) -> Relocatable {
        Relocatable {
            machine,
            endian,
            os_abi: elf::ELFOSABI_NONE,
            e_flags,
            sections: Vec::new(),
            symbols: Vec::new(),
        }
    }

    /// Sets `EI_OSABI` (`ELFOSABI_NONE` unless set).
    pub(crate) fn set_os_abi(&mut self, os_abi: elf::OsAbi) {
        self.os_abi = os_abi;
    }

    /// Adds an empty section.
    pub(crate) fn add_section(
        &mut self,
        name: &[u8],
        sh_type: elf::SectionType,
        sh_flags: elf::SectionFlags,
        align: u64,
    ) -> SectionId {
        self.sections.push(Section {
            name: name.to_vec(),
            sh_type,
            sh_flags,
            align,
            file_align: align,
            entsize: 0,
            contents: Contents::Bytes(Vec::new()),
            relocs: Vec::new(),
            symbol: None,
        });
        SectionId(self.sections.len() - 1)
    }

    /// Sets `sh_entsize` (a mergeable section's entry size).
    pub(crate) fn set_entsize(&mut self, id: SectionId, entsize: u64) {
        self.sections[id.0].entsize = entsize;
    }

    /// Sets the section's contents.
    pub(crate) fn set_bytes(&mut self, id: SectionId, bytes: Vec<u8>) {
        self.sections[id.0].contents = Contents::Bytes(bytes);
    }

    /// Gives the section (of type `SHT_NOBITS`) its size.
    pub(crate) fn set_nobits(&mut self, id: SectionId, size: u64) {
        self.sections[id.0].contents = Contents::NoBits(size);
    }

    /// Makes the section hold the caller's images: image `i` at offset
    /// `placed[i].0`, `placed[i].1` bytes long (not overlapping, in any
    /// order). The section starts at a multiple of `file_align` in
    /// the file (at least its alignment).
    pub(crate) fn set_images(&mut self, id: SectionId, placed: Vec<(u64, u64)>, file_align: u64) {
        let s = &mut self.sections[id.0];
        s.file_align = file_align.max(s.align);
        s.contents = Contents::Images(placed);
    }

    /// Adds a symbol (local symbols are listed before the others whenever
    /// they were added).
    pub(crate) fn add_symbol(
        &mut self,
        name: &[u8],
        st_info: elf::SymbolInfo,
        st_other: elf::SymbolOther,
        place: Place,
        value: u64,
        size: u64,
    ) -> SymbolId {
        self.symbols.push(Symbol {
            name: name.to_vec(),
            st_info,
            st_other,
            place,
            value,
            size,
        });
        SymbolId(self.symbols.len() - 1)
    }

    /// Adds the `STT_FILE` symbol.
    pub(crate) fn add_file_symbol(&mut self, name: &[u8]) -> SymbolId {
        self.add_symbol(
            name,
            elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_FILE),
            elf::SymbolOther::from(elf::STV_DEFAULT),
            Place::Absolute,
            0,
            0,
        )
    }

    /// The section's `STT_SECTION` symbol, added now if it has none yet.
    pub(crate) fn section_symbol(&mut self, id: SectionId) -> SymbolId {
        if let Some(s) = self.sections[id.0].symbol {
            return s;
        }
        let s = self.add_symbol(
            b"",
            elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_SECTION),
            elf::SymbolOther::from(elf::STV_DEFAULT),
            Place::Section(id),
            0,
            0,
        );
        self.sections[id.0].symbol = Some(s);
        s
    }

    /// Sets a symbol's value and size.
    pub(crate) fn set_extent(&mut self, id: SymbolId, value: u64, size: u64) {
        let s = &mut self.symbols[id.0];
        s.value = value;
        s.size = size;
    }

    /// Adds a relocation to the section.
    pub(crate) fn add_reloc(&mut self, id: SectionId, r: Reloc) {
        self.sections[id.0].relocs.push(r);
    }
}

#[cfg(test)]
mod tests;
