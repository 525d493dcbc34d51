//! The parts of an ELF image the symbol readers need, read once through
//! `object`'s ELF reader: the header fields, every section (name, type,
//! flags, `sh_info`, size, contents), the symbol table and the notes.
//! Both classes and both byte orders; a file whose headers, names or
//! tables lie outside it is an error. A section's contents are checked
//! only by the reader that uses them ([`Section::data`] is `None` when they
//! lie outside the file): CUDA's relocatable cubins give their
//! shared-memory and global sections types of their own that hold no
//! bytes, with sizes the file need not have room for.

use object::elf;
use object::read::elf::{FileHeader, NoteIterator, SectionHeader, Sym, SymbolTable};
use object::{Endianness, SymbolIndex};

use crate::error::{Error, Result};

/// One section.
pub(super) struct Section<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// `sh_info`.
    pub info: u32,
    /// `sh_size` (of `SHT_NOBITS` sections too).
    pub size: u64,
    /// Its contents: empty for `SHT_NOBITS`, `None` when `sh_offset` and
    /// `sh_size` reach past the end of the file.
    pub data: Option<&'a [u8]>,
}

/// One symbol.
pub(super) struct Symbol<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// `STT_*`.
    pub kind: u8,
    /// `STB_*`.
    pub bind: u8,
    /// `STV_*`.
    pub visibility: u8,
    /// `st_other` (CUDA keeps `STO_ENTRY` there).
    pub other: u8,
    /// Whether it is defined (`st_shndx` is not `SHN_UNDEF`).
    pub defined: bool,
    /// The index of the section it is defined in (`None` for undefined,
    /// absolute and common symbols).
    pub section: Option<usize>,
    /// Its index in the symbol table (the null symbol is 0).
    pub index: usize,
    /// `st_size`.
    pub size: u64,
}

impl Symbol<'_> {
    /// Whether another module can see it: global or weak, and not hidden
    /// or internal.
    pub(super) fn exported(&self) -> bool {
        self.defined
            && matches!(self.bind, b if b == elf::STB_GLOBAL.0 || b == elf::STB_WEAK.0)
            && self.visibility != elf::STV_HIDDEN.0
            && self.visibility != elf::STV_INTERNAL.0
    }

    /// A function (`STT_FUNC`) or a variable (`STT_OBJECT`); `None` for
    /// other types.
    pub(super) fn function_or_variable(&self) -> Option<super::SymbolKind> {
        match self.kind {
            k if k == elf::STT_FUNC.0 => Some(super::SymbolKind::Function),
            k if k == elf::STT_OBJECT.0 => Some(super::SymbolKind::Variable),
            _ => None,
        }
    }
}

/// One note: its name (without the NUL), type and descriptor.
pub(super) struct Note<'a> {
    pub name: &'a [u8],
    pub kind: u32,
    pub desc: &'a [u8],
}

/// An ELF file, read: its headers and sections at once, its symbols and
/// notes checked at once but decoded each time they are walked
/// ([`Parsed::symbols`], [`Parsed::notes`]), so that what is held stays
/// at one entry per section whatever the tables declare.
pub(super) struct Parsed<'a> {
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// `e_flags`.
    pub flags: u32,
    /// `e_type` (`ET_REL`, `ET_EXEC` …).
    pub kind: u16,
    /// The sections, in order (index 0, the null section, included).
    pub sections: Vec<Section<'a>>,
    /// `.symtab`, or `.dynsym` in a file without one.
    table: Table<'a>,
    /// The `SHT_NOTE` sections: their alignment and contents.
    note_sections: Vec<(u64, &'a [u8])>,
    endian: Endianness,
}

/// A symbol table of either class.
enum Table<'a> {
    Elf32(SymbolTable<'a, elf::FileHeader32<Endianness>>),
    Elf64(SymbolTable<'a, elf::FileHeader64<Endianness>>),
}

impl<'a> Parsed<'a> {
    /// How many symbols the table holds, the null symbol left out.
    pub(super) fn symbol_count(&self) -> usize {
        match &self.table {
            Table::Elf32(t) => t.len(),
            Table::Elf64(t) => t.len(),
        }
        .saturating_sub(1)
    }

    /// The symbols, in table order (the null symbol left out); their
    /// names were checked when the file was read.
    pub(super) fn symbols(&self) -> impl Iterator<Item = Symbol<'a>> + '_ {
        (1..=self.symbol_count()).filter_map(|i| match &self.table {
            Table::Elf32(t) => symbol(t, self.endian, i).ok(),
            Table::Elf64(t) => symbol(t, self.endian, i).ok(),
        })
    }

    /// The notes of every `SHT_NOTE` section, in order (checked when the
    /// file was read).
    pub(super) fn notes(&self) -> impl Iterator<Item = Note<'a>> + '_ {
        let endian = self.endian;
        self.note_sections.iter().flat_map(move |&(align, data)| {
            let mut it =
                NoteIterator::<elf::FileHeader64<Endianness>>::new(endian, align, data).ok();
            std::iter::from_fn(move || {
                let n = it.as_mut()?.next().ok()??;
                Some(Note {
                    name: n.name(),
                    kind: n.n_type(endian).0,
                    desc: n.desc(),
                })
            })
        })
    }
}

fn bad(e: object::read::Error) -> Error {
    Error::invalid("ELF image", e.to_string())
}

/// Symbol `index` of `table`.
fn symbol<'a, H: FileHeader<Endian = Endianness>>(
    table: &SymbolTable<'a, H>,
    endian: Endianness,
    index: usize,
) -> Result<Symbol<'a>> {
    let sym = table.symbol(SymbolIndex(index)).map_err(bad)?;
    let section = table
        .symbol_section(endian, sym, SymbolIndex(index))
        .ok()
        .flatten()
        .map(|i| i.0);
    Ok(Symbol {
        name: sym.name(endian, table.strings()).map_err(bad)?,
        kind: sym.st_type().0,
        bind: sym.st_bind().0,
        visibility: sym.st_visibility().0,
        other: sym.st_other().0,
        defined: sym.st_shndx(endian) != elf::SHN_UNDEF,
        section,
        index,
        size: sym.st_size(endian).into(),
    })
}

/// Runs `f` on `data` read as an ELF file. `data` is copied to an aligned
/// buffer first when it does not start at an 8-byte boundary (`object`
/// reads headers in place).
pub(super) fn with_parsed<T>(data: &[u8], f: impl FnOnce(&Parsed<'_>) -> Result<T>) -> Result<T> {
    if crate::host::object::is_aligned(data) {
        f(&parse(data)?)
    } else {
        let copy = crate::host::object::Aligned::copy_of(data);
        f(&parse(copy.bytes())?)
    }
}

fn parse(data: &[u8]) -> Result<Parsed<'_>> {
    match crate::host::elf::peek(data) {
        Some(p) if p.is_64() => parse_as::<elf::FileHeader64<Endianness>>(data, Table::Elf64),
        Some(_) => parse_as::<elf::FileHeader32<Endianness>>(data, Table::Elf32),
        None => Err(Error::invalid("ELF image", "no ELF magic")),
    }
}

fn parse_as<'a, H: FileHeader<Endian = Endianness>>(
    data: &'a [u8],
    wrap: fn(SymbolTable<'a, H>) -> Table<'a>,
) -> Result<Parsed<'a>> {
    let header = H::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let table = header.sections(endian, data).map_err(bad)?;
    let mut sections = Vec::with_capacity(table.len());
    let mut note_sections = Vec::new();
    for s in table.iter() {
        let name = table.section_name(endian, s).map_err(bad)?;
        let kind = s.sh_type(endian).0;
        let contents = if kind == elf::SHT_NOBITS.0 {
            Some(&[][..])
        } else {
            s.data(endian, data).ok()
        };
        if kind == elf::SHT_NOTE.0
            && let Some(mut it) = s.notes(endian, data).map_err(bad)?
        {
            // Checked now, read when asked for.
            while it.next().map_err(bad)?.is_some() {}
            let align: u64 = s.sh_addralign(endian).into();
            note_sections.push((align, contents.unwrap_or_default()));
        }
        sections.push(Section {
            name,
            info: s.sh_info(endian),
            size: s.sh_size(endian).into(),
            data: contents,
        });
    }
    let mut tab = table.symbols(endian, data, elf::SHT_SYMTAB).map_err(bad)?;
    if tab.is_empty() {
        tab = table.symbols(endian, data, elf::SHT_DYNSYM).map_err(bad)?;
    }
    // Every name is checked now; the symbols are decoded when walked.
    for index in 1..tab.len() {
        symbol(&tab, endian, index)?;
    }
    let ident = header.e_ident();
    Ok(Parsed {
        os_abi: ident.os_abi.0,
        abi_version: ident.abi_version,
        flags: header.e_flags(endian).0,
        kind: header.e_type(endian).0,
        sections,
        table: wrap(tab),
        note_sections,
        endian,
    })
}
