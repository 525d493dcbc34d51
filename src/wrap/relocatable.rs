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
//! in the [`Layout`] as [`Piece::Image`]s and are never read. Such a section
//! can also start at a larger file alignment than its `sh_addralign` (the
//! wrapper's fast layout for large images); everything else is unchanged.

use object::Endianness;
use object::elf;
use object::write::elf::{Encoder, FileHeader, FileHeaderLayout, Rel, SectionHeader, Sym};

use crate::error::{Error, Result};
use crate::layout::{Layout, Piece};
use crate::llvm::string_table::StringTable;
use crate::num::len64;

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
        .ok_or_else(|| Error::usage("the wrapper object would be larger than 2^64 bytes"))
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

    /// The file, as pieces.
    pub(crate) fn write(&self) -> Result<Layout> {
        let enc = Encoder::new(self.endian, true, self.machine);
        let plan = self.plan(&enc)?;
        let mut out = Out::default();
        enc.file_header(
            &mut out.pending,
            &FileHeader {
                os_abi: self.os_abi,
                abi_version: 0,
                e_type: elf::ET_REL,
                e_machine: self.machine,
                e_entry: 0,
                e_flags: elf::FileFlags(self.e_flags),
            },
            &FileHeaderLayout {
                e_phoff: 0,
                segment_num: 0,
                e_shoff: plan.shoff,
                section_num: plan.section_num,
                shstrtab_index: 1,
            },
        )
        .map_err(write_error)?;
        self.write_contents(&plan, &mut out);
        self.write_symbols(&plan, &enc, &mut out)?;
        self.write_relocations(&plan, &enc, &mut out);
        out.pad_to(plan.strtab_at);
        out.bytes(plan.strings.bytes());
        out.pad_to(plan.shoff);
        self.write_section_headers(&plan, &enc, &mut out.pending)?;
        out.flush();
        Ok(out.layout)
    }

    /// Where everything goes: symbol and section indices, names, file
    /// offsets.
    fn plan(&self, enc: &Encoder<Endianness>) -> Result<Plan> {
        // Symbol table order: the local symbols, then the others, each in
        // the order they were added; `table[id]` is a symbol's index.
        let is_local = |s: &Symbol| s.st_info.st_bind() == elf::STB_LOCAL;
        let order: Vec<usize> = (0..self.symbols.len())
            .filter(|&i| is_local(&self.symbols[i]))
            .chain((0..self.symbols.len()).filter(|&i| !is_local(&self.symbols[i])))
            .collect();
        let first_global = self.symbols.iter().filter(|s| is_local(s)).count();
        let mut table = vec![0u32; self.symbols.len()];
        for (at, &id) in order.iter().enumerate() {
            table[id] = u32::try_from(at + 1).map_err(write_error)?;
        }

        // Names, and section header indices: null, .strtab, each section
        // followed by its relocations, .symtab.
        let rela_names: Vec<Option<Vec<u8>>> = self
            .sections
            .iter()
            .map(|s| (!s.relocs.is_empty()).then(|| [&b".rela"[..], &s.name].concat()))
            .collect();
        let strings = StringTable::build(
            self.sections
                .iter()
                .map(|s| &s.name[..])
                .chain(rela_names.iter().flatten().map(|n| &n[..]))
                .chain([&b".strtab"[..], b".symtab"])
                .chain(self.symbols.iter().map(|s| &s.name[..])),
        );
        let mut index = Vec::with_capacity(self.sections.len());
        let mut next = 2u32;
        for r in &rela_names {
            index.push(next);
            next += if r.is_some() { 2 } else { 1 };
        }
        let symtab_index = next;
        let section_num = next + 1;
        if section_num >= u32::from(elf::SHN_LORESERVE) {
            return Err(write_error("too many sections"));
        }
        let mut plan = Plan {
            order,
            table,
            first_global: u32::try_from(first_global + 1).map_err(write_error)?,
            rela_names,
            strings,
            index,
            symtab_index,
            section_num,
            offsets: Vec::new(),
            symtab_at: 0,
            symtab_len: 0,
            rela_at: Vec::new(),
            strtab_at: 0,
            shoff: 0,
        };
        self.place(enc, &mut plan)?;
        Ok(plan)
    }

    /// The file offsets of `plan`: the sections' contents in order, then
    /// `.symtab`, the `.rela` sections, `.strtab` and the section headers.
    fn place(&self, enc: &Encoder<Endianness>, plan: &mut Plan) -> Result<()> {
        let too_large = || Error::usage("the wrapper object would be larger than 2^64 bytes");
        let add = |a: u64, b: u64| a.checked_add(b).ok_or_else(too_large);
        let mut at = enc.file_header_size();
        for s in &self.sections {
            at = align_up(at, s.file_align)?;
            plan.offsets.push(at);
            at = add(at, s.file_size())?;
        }
        plan.symtab_at = align_up(at, 8)?;
        plan.symtab_len = enc.sym_size() * (len64(&self.symbols) + 1);
        at = add(plan.symtab_at, plan.symtab_len)?;
        for s in &self.sections {
            if s.relocs.is_empty() {
                plan.rela_at.push(0);
                continue;
            }
            at = align_up(at, 8)?;
            plan.rela_at.push(at);
            at = add(at, enc.rel_size(true) * len64(&s.relocs))?;
        }
        plan.strtab_at = at;
        plan.shoff = align_up(add(at, len64(plan.strings.bytes()))?, 8)?;
        Ok(())
    }

    /// Each section's contents at its offset; images as pieces.
    fn write_contents(&self, plan: &Plan, out: &mut Out) {
        for (s, &off) in self.sections.iter().zip(&plan.offsets) {
            out.pad_to(off);
            match &s.contents {
                Contents::Bytes(b) => out.bytes(b),
                Contents::Images(placed) => {
                    // In file order, which need not be the images' order.
                    let mut order: Vec<usize> = (0..placed.len()).collect();
                    order.sort_by_key(|&i| placed[i].0);
                    for i in order {
                        let (o, len) = placed[i];
                        out.pad_to(off + o);
                        out.flush();
                        out.layout.push(Piece::Image(i), len);
                    }
                    out.pad_to(off + s.size());
                }
                Contents::NoBits(_) => {}
            }
        }
    }

    /// `.symtab`.
    fn write_symbols(&self, plan: &Plan, enc: &Encoder<Endianness>, out: &mut Out) -> Result<()> {
        out.pad_to(plan.symtab_at);
        enc.null_symbol(&mut out.pending);
        for s in plan.order.iter().map(|&i| &self.symbols[i]) {
            let (section, st_shndx) = match s.place {
                Place::Undefined => (None, elf::SHN_UNDEF),
                Place::Absolute => (None, elf::SHN_ABS),
                Place::Section(id) => (Some(plan.index[id.0]), elf::SHN_UNDEF),
            };
            enc.symbol(
                &mut out.pending,
                &Sym {
                    section,
                    st_name: plan.name(&s.name)?,
                    st_info: s.st_info,
                    st_other: s.st_other,
                    st_shndx,
                    st_value: s.value,
                    st_size: s.size,
                },
            );
        }
        Ok(())
    }

    /// The `.rela` sections.
    fn write_relocations(&self, plan: &Plan, enc: &Encoder<Endianness>, out: &mut Out) {
        for (s, &off) in self.sections.iter().zip(&plan.rela_at) {
            if s.relocs.is_empty() {
                continue;
            }
            out.pad_to(off);
            for r in &s.relocs {
                enc.relocation(
                    &mut out.pending,
                    true,
                    &Rel {
                        r_offset: r.offset,
                        r_sym: plan.table[r.symbol.0],
                        r_type: r.r_type,
                        r_addend: r.addend,
                    },
                );
            }
        }
    }

    /// The section header table.
    fn write_section_headers(
        &self,
        plan: &Plan,
        enc: &Encoder<Endianness>,
        p: &mut Vec<u8>,
    ) -> Result<()> {
        enc.null_section_header(
            p,
            &FileHeaderLayout {
                section_num: plan.section_num,
                shstrtab_index: 1,
                ..FileHeaderLayout::default()
            },
        );
        enc.section_header(
            p,
            &SectionHeader {
                sh_name: plan.name(b".strtab")?,
                sh_offset: plan.strtab_at,
                sh_size: len64(plan.strings.bytes()),
                ..enc.strtab_section_header()
            },
        );
        for (i, s) in self.sections.iter().enumerate() {
            enc.section_header(
                p,
                &SectionHeader {
                    sh_name: plan.name(&s.name)?,
                    sh_type: s.sh_type,
                    sh_flags: s.sh_flags,
                    sh_addr: 0,
                    sh_offset: plan.offsets[i],
                    sh_size: s.size(),
                    sh_link: 0,
                    sh_info: 0,
                    sh_addralign: s.align,
                    sh_entsize: s.entsize,
                },
            );
            if let Some(rela) = &plan.rela_names[i] {
                enc.section_header(
                    p,
                    &SectionHeader {
                        sh_name: plan.name(rela)?,
                        sh_offset: plan.rela_at[i],
                        sh_size: enc.rel_size(true) * len64(&s.relocs),
                        sh_link: plan.symtab_index,
                        sh_info: plan.index[i],
                        ..enc.relocation_section_header(true)
                    },
                );
            }
        }
        enc.section_header(
            p,
            &SectionHeader {
                sh_name: plan.name(b".symtab")?,
                sh_offset: plan.symtab_at,
                sh_size: plan.symtab_len,
                ..enc.symtab_section_header(1, plan.first_global)
            },
        );
        Ok(())
    }
}

/// Where [`Relocatable::write`] puts everything.
struct Plan {
    /// Symbols in table order (ids).
    order: Vec<usize>,
    /// Each symbol's index in the table, by id.
    table: Vec<u32>,
    /// Index of the first global symbol (`sh_info` of `.symtab`).
    first_global: u32,
    /// Name of each section's `.rela` section, if it has relocations.
    rela_names: Vec<Option<Vec<u8>>>,
    /// The one string table.
    strings: StringTable,
    /// Each section's header index.
    index: Vec<u32>,
    /// `.symtab`'s header index.
    symtab_index: u32,
    /// Number of section headers.
    section_num: u32,
    /// File offset of each section's contents.
    offsets: Vec<u64>,
    /// File offset and size of `.symtab`.
    symtab_at: u64,
    symtab_len: u64,
    /// File offset of each section's `.rela` section (0 without one).
    rela_at: Vec<u64>,
    /// File offset of `.strtab`.
    strtab_at: u64,
    /// File offset of the section header table.
    shoff: u64,
}

impl Plan {
    /// Offset of `s` in the string table.
    fn name(&self, s: &[u8]) -> Result<u32> {
        let off = self
            .strings
            .offset(s)
            .ok_or_else(|| write_error("a name is missing from the string table"))?;
        u32::try_from(off).map_err(write_error)
    }
}

/// The layout being written: pieces so far, plus built bytes not yet
/// pushed.
#[derive(Default)]
struct Out {
    layout: Layout,
    pending: Vec<u8>,
}

impl Out {
    /// The offset the next byte lands at.
    fn at(&self) -> u64 {
        self.layout.size + len64(&self.pending)
    }

    fn bytes(&mut self, b: &[u8]) {
        self.pending.extend_from_slice(b);
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let b = std::mem::take(&mut self.pending);
            let len = len64(&b);
            self.layout.push(Piece::Bytes(b), len);
        }
    }

    /// Zeros up to `offset` (never backwards): a few bytes inline, large
    /// runs as a zero piece.
    fn pad_to(&mut self, offset: u64) {
        let n = offset.saturating_sub(self.at());
        if n >= 4096 {
            self.flush();
            self.layout.push(Piece::Zeros(n), n);
        } else {
            let n = usize::try_from(n).unwrap_or(0);
            self.pending.resize(self.pending.len() + n, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use object::read::elf::{ElfFile64, FileHeader as _, SectionHeader as _};
    use object::{LittleEndian as LE, Object as _, ObjectSection as _, ObjectSymbol as _};

    use super::*;

    fn sample(file_align: u64) -> Relocatable {
        let mut o = Relocatable::new(elf::EM_X86_64, 0, Endianness::Little);
        let text = o.add_section(b".text", elf::SHT_PROGBITS, elf::SHF_ALLOC, 16);
        o.set_bytes(text, vec![0xc3; 5]);
        let data = o.add_section(b"data", elf::SHT_PROGBITS, elf::SHF_ALLOC, 8);
        o.set_images(data, vec![(0, 3), (8, 5)], file_align);
        o.add_file_symbol(b"f.c");
        let sec = o.section_symbol(data);
        assert_eq!(
            o.section_symbol(data),
            sec,
            "one section symbol per section"
        );
        let (info, other) = (
            elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_FUNC),
            elf::SymbolOther::from(elf::STV_DEFAULT),
        );
        let f = o.add_symbol(b"f", info, other, Place::Section(text), 0, 0);
        o.set_extent(f, 0, 5);
        let g = o.add_symbol(
            b"g",
            elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_NOTYPE),
            other,
            Place::Undefined,
            0,
            0,
        );
        o.add_reloc(
            text,
            Reloc {
                offset: 1,
                symbol: g,
                r_type: elf::R_X86_64_PLT32,
                addend: -4,
            },
        );
        o.add_reloc(
            text,
            Reloc {
                offset: 2,
                symbol: sec,
                r_type: elf::R_X86_64_PC32,
                addend: 8,
            },
        );
        o
    }

    fn bytes(layout: &Layout, images: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        layout.write_to(&mut out, images).unwrap();
        assert_eq!(out.len() as u64, layout.size);
        out
    }

    #[test]
    fn sections_symbols_and_names_in_llc_order() {
        let layout = sample(8).write().unwrap();
        let out = bytes(&layout, &[b"abc", b"defgh"]);
        let f = ElfFile64::<LE>::parse(&*out).unwrap();
        assert_eq!(f.elf_header().e_shstrndx(LE), elf::SymbolSection::new(1));
        let names: Vec<_> = f
            .sections()
            .map(|s| s.name().unwrap().to_string())
            .collect();
        assert_eq!(names, [".strtab", ".text", ".rela.text", "data", ".symtab"]);
        // One table: ".text" is the tail of ".rela.text".
        let sh = |i: usize| {
            f.elf_section_table()
                .section(object::SectionIndex(i))
                .unwrap()
        };
        assert_eq!(sh(2).sh_name(LE), sh(3).sh_name(LE) + 5);
        let rela = sh(3);
        assert_eq!((rela.sh_link(LE), rela.sh_info(LE)), (5, 2));
        let symtab = sh(5);
        assert_eq!((symtab.sh_link(LE), symtab.sh_info(LE)), (1, 4));
        // File order: contents, .symtab, .rela, .strtab, section headers.
        let at = |i: usize| sh(i).sh_offset(LE);
        assert!(at(2) < at(4) && at(4) < at(5) && at(5) < at(3) && at(3) < at(1));
        assert_eq!(f.elf_header().e_shoff(LE) % 8, 0);
        assert!(f.elf_header().e_shoff(LE) >= at(1) + sh(1).sh_size(LE));
        // The images, with the gap between them zeroed.
        let data = f.section_by_name("data").unwrap();
        assert_eq!(data.data().unwrap(), b"abc\0\0\0\0\0defgh");
        let syms: Vec<_> = f
            .symbols()
            .map(|s| (s.name().unwrap().to_string(), s.index().0, s.size()))
            .collect();
        assert_eq!(syms[0], ("f.c".to_string(), 1, 0));
        assert_eq!(syms[2], ("f".to_string(), 3, 5));
        assert_eq!(syms[3], ("g".to_string(), 4, 0));
        let relocs: Vec<_> = f
            .section_by_name(".text")
            .unwrap()
            .relocations()
            .map(|(off, r)| (off, r.target(), r.addend()))
            .collect();
        assert_eq!(relocs.len(), 2);
        assert_eq!(
            relocs[0],
            (
                1,
                object::RelocationTarget::Symbol(object::SymbolIndex(4)),
                -4
            )
        );
        assert_eq!(
            relocs[1],
            (
                2,
                object::RelocationTarget::Symbol(object::SymbolIndex(2)),
                8
            )
        );
        // The images are pieces, not bytes.
        let images = layout.image_indices();
        assert_eq!(images, [0, 1]);
    }

    #[test]
    fn a_file_alignment_moves_only_the_image_section() {
        let near = bytes(&sample(8).write().unwrap(), &[b"abc", b"defgh"]);
        let far_layout = sample(1 << 16).write().unwrap();
        let far = bytes(&far_layout, &[b"abc", b"defgh"]);
        let a = ElfFile64::<LE>::parse(&*near).unwrap();
        let b = ElfFile64::<LE>::parse(&*far).unwrap();
        let (sa, sb) = (
            a.section_by_name("data").unwrap(),
            b.section_by_name("data").unwrap(),
        );
        assert_eq!(sb.file_range().unwrap().0, 1 << 16);
        assert_eq!((sa.align(), sb.align()), (8, 8));
        assert_eq!(sa.data().unwrap(), sb.data().unwrap());
        // The padding is one zero piece, not 64 KiB of built bytes.
        assert!(
            far_layout
                .pieces
                .iter()
                .any(|p| matches!(p, Piece::Zeros(n) if *n > 60000))
        );
    }

    #[test]
    fn a_local_symbol_added_late_is_listed_with_the_locals() {
        let mut o = sample(8);
        let other = elf::SymbolOther::from(elf::STV_DEFAULT);
        let late = o.add_symbol(
            b"late",
            elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_OBJECT),
            other,
            Place::Absolute,
            0,
            0,
        );
        let text = SectionId(0);
        o.add_reloc(
            text,
            Reloc {
                offset: 3,
                symbol: late,
                r_type: elf::R_X86_64_PC32,
                addend: 0,
            },
        );
        let out = bytes(&o.write().unwrap(), &[b"abc", b"defgh"]);
        let f = ElfFile64::<LE>::parse(&*out).unwrap();
        let names: Vec<_> = f.symbols().map(|s| s.name().unwrap().to_string()).collect();
        assert_eq!(names, ["f.c", "", "f", "late", "g"]);
        let symtab = f
            .elf_section_table()
            .section(object::SectionIndex(5))
            .unwrap();
        assert_eq!(symtab.sh_info(LE), 5, "first global");
        let targets: Vec<_> = f
            .section_by_name(".text")
            .unwrap()
            .relocations()
            .map(|(_, r)| r.target())
            .collect();
        assert_eq!(
            targets,
            [5, 2, 4].map(|i| object::RelocationTarget::Symbol(object::SymbolIndex(i)))
        );
    }
}
