//! The wrapper's COFF object: a small model (sections, symbols,
//! relocations) and its writer, laid out as LLVM 22's COFF object writer
//! (`llc -filetype=obj`) lays out the same object:
//!
//! | offset | contents |
//! |---|---|
//! | 0 | file header (20 bytes; no optional header, time stamp 0) |
//! | 20 | one 40-byte section header per section, in the order added |
//! | 20 + 40 × N | each section's bytes then its relocations (10 bytes each), section after section, with no padding between (`.bss` takes no bytes) |
//! | … | the symbol table (18-byte records) |
//! | … | the string table: its size (4 bytes), then the names longer than 8 bytes |
//!
//! Symbols: first each section's symbol (static, with a section-definition
//! record: length, relocation count, the JamCRC checksum of its bytes,
//! its number), then the others in the order added. Names longer than 8
//! bytes go to the string table, which is built as LLVM's
//! `StringTableBuilder` builds it for COFF ([`StringTable`]); a section
//! name there is written `/offset`.
//!
//! A section can hold the caller's images instead of built bytes: they
//! appear in the [`Layout`] as [`Piece::Image`]s and are never read; their
//! checksum comes with them. Such a section may start at a larger file
//! alignment than the others (the wrapper's fast layout for large
//! images); the bytes skipped are zeros no header refers to.

use object::LittleEndian as LE;
use object::pe;
use object::pod::bytes_of;
use object::{U16, U32};

use crate::error::{Error, Result};
use crate::host::object::coff::strtab::{StringTable, long_section_name};
use crate::layout::{Builder, Layout};
use crate::llvm::jam_crc::jam_crc;
use crate::num::len64;

/// A section of a [`Coff`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SectionId(pub usize);

/// A symbol of a [`Coff`] (not a section symbol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SymbolId(pub usize);

/// What a relocation or a symbol refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ref {
    /// A section's own symbol.
    Section(SectionId),
    /// Any other symbol.
    Symbol(SymbolId),
}

/// A relocation; its addend is in the section's bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reloc {
    /// Offset in the section.
    pub offset: u32,
    /// What it refers to.
    pub target: Ref,
    /// `IMAGE_REL_*` type.
    pub r_type: u16,
}

/// A section's contents.
#[derive(Debug)]
pub(super) enum Data {
    /// Bytes built here.
    Bytes(Vec<u8>),
    /// The caller's images: (offset, length) of image `i`, zeros between
    /// them, `size` bytes in all, whose checksum is `crc`.
    Images {
        /// Where each image goes.
        placed: Vec<(u64, u64)>,
        /// The section's size.
        size: u64,
        /// The JamCRC of the section's bytes.
        crc: u32,
    },
    /// Zeros that take no room in the file.
    Bss(u32),
}

/// A section.
#[derive(Debug)]
pub(super) struct Section {
    /// Its name.
    pub name: Vec<u8>,
    /// `IMAGE_SCN_*` flags, alignment included.
    pub flags: u32,
    /// Its contents.
    pub data: Data,
    /// Its relocations.
    pub relocs: Vec<Reloc>,
    /// Where its bytes may start in the file: a multiple of this.
    pub file_align: u64,
}

impl Section {
    /// A section of built bytes.
    pub(super) fn new(name: &[u8], flags: u32, bytes: Vec<u8>) -> Section {
        Section {
            name: name.to_vec(),
            flags,
            data: Data::Bytes(bytes),
            relocs: Vec::new(),
            file_align: 1,
        }
    }

    fn size(&self) -> u64 {
        match &self.data {
            Data::Bytes(b) => len64(b),
            Data::Images { size, .. } => *size,
            Data::Bss(n) => u64::from(*n),
        }
    }

    fn checksum(&self) -> u32 {
        match &self.data {
            Data::Bytes(b) => jam_crc(b),
            Data::Images { crc, .. } => *crc,
            Data::Bss(_) => 0,
        }
    }
}

/// Where a symbol is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// Elsewhere (an external or a weak external).
    Undefined,
    /// Nowhere (`IMAGE_SYM_ABSOLUTE`).
    Absolute,
    /// In a section.
    Section(SectionId),
}

/// A symbol other than a section symbol.
#[derive(Debug)]
pub(super) struct Symbol {
    /// Its name.
    pub name: Vec<u8>,
    /// Its value (offset in its section).
    pub value: u32,
    /// Where it is defined.
    pub place: Place,
    /// Whether it is a function (`IMAGE_SYM_DTYPE_FUNCTION`).
    pub function: bool,
    /// `IMAGE_SYM_CLASS_*`.
    pub class: u8,
    /// A weak external's default: the symbol its auxiliary record names.
    pub weak_default: Option<SymbolId>,
}

/// A COFF relocatable object under construction.
#[derive(Debug)]
pub(super) struct Coff {
    /// `IMAGE_FILE_MACHINE_*`.
    pub machine: u16,
    /// Sections, in file order.
    pub sections: Vec<Section>,
    /// Symbols after the section symbols, in table order.
    pub symbols: Vec<Symbol>,
    /// The name in the `.file` symbol, written last.
    pub file: &'static [u8],
    /// Whether each section symbol is followed by a label every 1 MiB of
    /// the section (ARM64, see [`LABEL_STEP`]).
    pub labels: bool,
}

/// On ARM64, LLVM's COFF writer adds a label (`$L<section>_<k>`, class
/// `IMAGE_SYM_CLASS_LABEL`) at each multiple of 1 MiB inside a section,
/// so that a relocation far into a large section can be made against a
/// nearby label, its addend fitting the instruction's immediate.
const LABEL_STEP: u64 = 1 << 20;

/// Sizes of the records.
const FILE_HEADER: u64 = 20;
const SECTION_HEADER: u64 = 40;
const RELOCATION: u64 = 10;
const SYMBOL: usize = 18;

fn write_error(detail: impl std::fmt::Display) -> Error {
    Error::write("COFF object", detail)
}

fn u32_of(x: impl TryInto<u32>) -> Result<u32> {
    x.try_into()
        .map_err(|_| Error::too_large("the wrapper object"))
}

fn u16_of(x: usize) -> Result<u16> {
    u16::try_from(x).map_err(|_| write_error("too many sections or relocations"))
}

/// The 8-byte name field of a symbol: the name, or 4 zeros and its
/// offset in the string table.
fn symbol_name(name: &[u8], strings: &StringTable) -> Result<[u8; 8]> {
    let mut field = [0u8; 8];
    if name.len() <= 8 {
        field[..name.len()].copy_from_slice(name);
    } else {
        let at = strings
            .offset(name)
            .ok_or_else(|| write_error("a name is missing from the string table"))?;
        field[4..].copy_from_slice(&u32_of(at)?.to_le_bytes());
    }
    Ok(field)
}

impl Coff {
    /// How many auxiliary records the `.file` symbol takes.
    fn file_records(&self) -> usize {
        self.file.len().div_ceil(SYMBOL)
    }

    /// How many labels follow the section symbol of `s`.
    fn label_count(&self, s: &Section) -> u64 {
        if self.labels {
            s.size().saturating_sub(1) / LABEL_STEP
        } else {
            0
        }
    }

    /// The symbol table index of each section symbol, and where the
    /// other symbols start.
    fn section_indices(&self) -> (Vec<u32>, usize) {
        let mut at = 0usize;
        let mut out = Vec::with_capacity(self.sections.len());
        for s in &self.sections {
            out.push(u32::try_from(at).unwrap_or(u32::MAX));
            let labels = usize::try_from(self.label_count(s)).unwrap_or(usize::MAX);
            at = at.saturating_add(2).saturating_add(labels);
        }
        (out, at)
    }

    /// The symbol table index of each symbol.
    fn indices(&self) -> Vec<u32> {
        let mut at = self.section_indices().1;
        self.symbols
            .iter()
            .map(|s| {
                let i = at;
                at += 1 + usize::from(s.weak_default.is_some());
                u32::try_from(i).unwrap_or(u32::MAX)
            })
            .collect()
    }

    /// Where each section's bytes and relocations go (file offsets; 0
    /// for none), and where the symbol table starts.
    fn place(&self) -> Result<(Vec<(u32, u32)>, u64)> {
        let count = len64(&self.sections);
        let mut at = FILE_HEADER + SECTION_HEADER * count;
        let mut places = Vec::with_capacity(self.sections.len());
        for s in &self.sections {
            let raw = if matches!(s.data, Data::Bss(_)) {
                0
            } else {
                at = at
                    .checked_next_multiple_of(s.file_align.max(1))
                    .ok_or_else(|| Error::too_large("the wrapper object"))?;
                let raw = at;
                at += s.size();
                raw
            };
            let relocs = if s.relocs.is_empty() {
                0
            } else {
                let r = at;
                at += RELOCATION * len64(&s.relocs);
                r
            };
            places.push((u32_of(raw)?, u32_of(relocs)?));
        }
        Ok((places, at))
    }

    /// The file, as pieces.
    pub(super) fn write(&self) -> Result<Layout> {
        let indices = self.indices();
        let (section_indices, first_symbol) = self.section_indices();
        let index_of = |r: Ref| match r {
            Ref::Section(s) => section_indices
                .get(s.0)
                .copied()
                .ok_or_else(|| write_error("a relocation refers to no section")),
            Ref::Symbol(s) => indices
                .get(s.0)
                .copied()
                .ok_or_else(|| write_error("a relocation refers to no symbol")),
        };
        let long = |n: &&[u8]| n.len() > 8;
        let label_names = self.label_names();
        let names: Vec<&[u8]> = self
            .sections
            .iter()
            .map(|s| &s.name[..])
            .chain(label_names.iter().flatten().map(|(n, _)| &n[..]))
            .chain(self.symbols.iter().map(|s| &s.name[..]))
            .filter(long)
            .collect();
        let strings = StringTable::build(&[], &names);

        let (places, at) = self.place()?;
        let symtab = u32_of(at)?;
        let records = first_symbol
            + self
                .symbols
                .iter()
                .map(|s| 1 + usize::from(s.weak_default.is_some()))
                .sum::<usize>()
            + 1
            + self.file_records();

        let head = self.headers(&strings, &places, symtab, records)?;
        let mut out = Builder {
            layout: Layout::default(),
            pending: head,
        };
        for (s, &(raw, _)) in self.sections.iter().zip(&places) {
            match &s.data {
                Data::Bss(_) => {}
                Data::Bytes(b) => {
                    out.pad_to(u64::from(raw));
                    out.pending.extend_from_slice(b);
                }
                Data::Images { placed, size, .. } => {
                    out.pad_to(u64::from(raw));
                    let start = u64::from(raw);
                    let mut order: Vec<usize> = (0..placed.len()).collect();
                    order.sort_by_key(|&i| placed[i].0);
                    for i in order {
                        let (off, len) = placed[i];
                        out.pad_to(start + off);
                        out.image(i, len);
                    }
                    out.pad_to(start + size);
                }
            }
            for r in &s.relocs {
                let rec = pe::ImageRelocation {
                    virtual_address: U32::new(LE, r.offset),
                    symbol_table_index: U32::new(LE, index_of(r.target)?),
                    typ: U16::new(LE, pe::RelocationType(r.r_type)),
                };
                out.pending.extend_from_slice(bytes_of(&rec));
            }
        }
        self.symbol_table(&strings, &indices, &label_names, &mut out.pending)?;
        let size = u32_of(strings.len())?;
        out.pending
            .extend_from_slice(&strings.clone().into_bytes(size));
        Ok(out.finish())
    }

    /// The file header and the section headers.
    fn headers(
        &self,
        strings: &StringTable,
        places: &[(u32, u32)],
        symtab: u32,
        records: usize,
    ) -> Result<Vec<u8>> {
        let mut head = Vec::new();
        let header = pe::ImageFileHeader {
            machine: U16::new(LE, pe::Machine(self.machine)),
            number_of_sections: U16::new(LE, u16_of(self.sections.len())?),
            time_date_stamp: U32::new(LE, 0),
            pointer_to_symbol_table: U32::new(LE, symtab),
            number_of_symbols: U32::new(LE, u32_of(records)?),
            size_of_optional_header: U16::new(LE, 0),
            characteristics: U16::new(LE, pe::FileFlags(0)),
        };
        head.extend_from_slice(bytes_of(&header));
        for (s, &(raw, relocs)) in self.sections.iter().zip(places) {
            let name = if s.name.len() <= 8 {
                let mut n = [0u8; 8];
                n[..s.name.len()].copy_from_slice(&s.name);
                n
            } else {
                let at = strings
                    .offset(&s.name)
                    .ok_or_else(|| write_error("a section name is missing"))?;
                long_section_name(at).ok_or_else(|| write_error("the string table is too large"))?
            };
            let h = pe::ImageSectionHeader {
                name,
                virtual_size: U32::new(LE, 0),
                virtual_address: U32::new(LE, 0),
                size_of_raw_data: U32::new(LE, u32_of(s.size())?),
                pointer_to_raw_data: U32::new(LE, raw),
                pointer_to_relocations: U32::new(LE, relocs),
                pointer_to_linenumbers: U32::new(LE, 0),
                number_of_relocations: U16::new(LE, u16_of(s.relocs.len())?),
                number_of_linenumbers: U16::new(LE, 0),
                characteristics: U32::new(LE, pe::SectionFlags(s.flags)),
            };
            head.extend_from_slice(bytes_of(&h));
        }

        Ok(head)
    }

    /// Each section's labels: (name, value).
    fn label_names(&self) -> Vec<Vec<(Vec<u8>, u32)>> {
        self.sections
            .iter()
            .map(|s| {
                (1..=self.label_count(s))
                    .map(|k| {
                        let mut name = b"$L".to_vec();
                        name.extend_from_slice(&s.name);
                        name.extend_from_slice(format!("_{k}").as_bytes());
                        (name, u32::try_from(k * LABEL_STEP).unwrap_or(u32::MAX))
                    })
                    .collect()
            })
            .collect()
    }

    /// The symbol table.
    fn symbol_table(
        &self,
        strings: &StringTable,
        indices: &[u32],
        labels: &[Vec<(Vec<u8>, u32)>],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let static_ = pe::IMAGE_SYM_CLASS_STATIC.0;
        let label = pe::IMAGE_SYM_CLASS_LABEL.0;
        for (i, (s, labels)) in self.sections.iter().zip(labels).enumerate() {
            let number = u16_of(i + 1)?;
            put_symbol(
                out,
                symbol_name(&s.name, strings)?,
                0,
                number,
                0,
                static_,
                1,
            );
            let aux = pe::ImageAuxSymbolSection {
                length: U32::new(LE, u32_of(s.size())?),
                number_of_relocations: U16::new(LE, u16_of(s.relocs.len())?),
                number_of_linenumbers: U16::new(LE, 0),
                check_sum: U32::new(LE, s.checksum()),
                number: U16::new(LE, number),
                selection: pe::ComdatSelection(0),
                reserved: 0,
                high_number: U16::new(LE, 0),
            };
            put_record(out, bytes_of(&aux));
            for (name, value) in labels {
                let name = symbol_name(name, strings)?;
                put_symbol(out, name, *value, number, 0, label, 0);
            }
        }
        for s in &self.symbols {
            let number = match s.place {
                Place::Undefined => 0,
                // -1 in 16 bits.
                Place::Absolute => 0xffff,
                Place::Section(id) => u16_of(id.0 + 1)?,
            };
            let typ = if s.function {
                pe::IMAGE_SYM_DTYPE_FUNCTION.0 << 4
            } else {
                0
            };
            let aux = u8::from(s.weak_default.is_some());
            let name = symbol_name(&s.name, strings)?;
            put_symbol(out, name, s.value, number, typ, s.class, aux);
            if let Some(d) = s.weak_default {
                let index = indices
                    .get(d.0)
                    .copied()
                    .ok_or_else(|| write_error("a weak external has no default"))?;
                let weak = pe::ImageAuxSymbolWeak {
                    weak_default_sym_index: U32::new(LE, index),
                    weak_search_type: U32::new(LE, pe::IMAGE_WEAK_EXTERN_SEARCH_ALIAS),
                };
                put_record(out, bytes_of(&weak));
            }
        }
        // The `.file` symbol (in `IMAGE_SYM_DEBUG`, -2), its name in as many
        // auxiliary records as it takes, zero-padded.
        let records = self.file_records();
        let aux = u8::try_from(records).map_err(|_| write_error("file name too long"))?;
        let class = pe::IMAGE_SYM_CLASS_FILE.0;
        put_symbol(out, *b".file\0\0\0", 0, 0xfffe, 0, class, aux);
        let start = out.len();
        out.extend_from_slice(self.file);
        out.resize(start + records * SYMBOL, 0);
        Ok(())
    }
}

/// One symbol record.
fn put_symbol(
    out: &mut Vec<u8>,
    name: [u8; 8],
    value: u32,
    section: u16,
    typ: u16,
    class: u8,
    aux: u8,
) {
    let sym = pe::ImageSymbol {
        name,
        value: U32::new(LE, value),
        section_number: U16::new(LE, section),
        typ: U16::new(LE, pe::SymbolType(typ)),
        storage_class: pe::SymbolClass(class),
        number_of_aux_symbols: aux,
    };
    out.extend_from_slice(bytes_of(&sym));
}

/// One auxiliary record: `bytes`, zero-padded to a record's size.
fn put_record(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    out.extend_from_slice(bytes);
    out.resize(start + SYMBOL, 0);
}
